package gguf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path string, kvs []KV, tensors []Tensor, size func(Tensor) uint64) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors, 32, size); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNEmbdFromMmproj(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mmproj.gguf")
	writeFile(t, p, []KV{String("general.architecture", "clip"), Uint32(ProjectionDimKey, 2560)},
		[]Tensor{{Name: "v.patch_embd.weight", Dims: []uint64{16, 16}, Type: ggmlF32}}, func(Tensor) uint64 { return 1024 })
	n, err := NEmbd(p)
	if err != nil || n != 2560 {
		t.Fatalf("NEmbd = %d, %v; want 2560", n, err)
	}
	q := filepath.Join(dir, "text.gguf")
	writeFile(t, q, []KV{String("general.architecture", "qwen3moe")}, nil, nil)
	if _, err := NEmbd(q); err == nil {
		t.Fatal("a text model has no projection_dim, yet NEmbd found one")
	}
	os.WriteFile(filepath.Join(dir, "junk"), []byte("PK\x03\x04 not gguf"), 0o644)
	if _, err := NEmbd(filepath.Join(dir, "junk")); err == nil {
		t.Fatal("a zip file was read as GGUF")
	}
}

func TestVocabStubKeepsMetadataAndVocabulary(t *testing.T) {
	dir := t.TempDir()
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("tok%d\x00'\"", i)
	}
	kvs := []KV{
		String("general.architecture", "qwen3moe"),
		Uint32("qwen3moe.block_count", 48),
		Strings("tokenizer.ggml.tokens", vocab),
		String("tokenizer.ggml.model", "gpt2"),
		Uint32("split.no", 0),
		Uint32("split.count", 9),
	}
	var tensors []Tensor
	for i := 0; i < 20; i++ {
		tensors = append(tensors, Tensor{Name: fmt.Sprintf("blk.%d.ffn_up_exps.weight", i), Dims: []uint64{512, 256, 8}, Type: 12})
	}
	src := filepath.Join(dir, "model-00001-of-00009.gguf")
	// 1 MiB of (zero) data per tensor stands in for gigabytes.
	writeFile(t, src, kvs, tensors, func(Tensor) uint64 { return 1 << 20 })

	var out bytes.Buffer
	if err := WriteVocabStub(src, &out); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(src)
	if out.Len() > int(st.Size())/10 {
		t.Fatalf("stub is %d bytes for a %d-byte shard: not tiny", out.Len(), st.Size())
	}
	g, err := Read(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := ReadFile(src)
	for _, kv := range orig.KVs {
		got, ok := g.Get(kv.Key)
		switch {
		case kv.Key == "split.no" || kv.Key == "split.count":
			if ok {
				t.Errorf("stub keeps %s: a loader would look for the other shards", kv.Key)
			}
		case !ok || got.Type != kv.Type || !bytes.Equal(got.Raw, kv.Raw):
			t.Errorf("metadata %s changed in the stub", kv.Key)
		}
	}
	if len(g.Tensors) != len(tensors) {
		t.Fatalf("stub has %d tensors, want %d", len(g.Tensors), len(tensors))
	}
	for i, tn := range g.Tensors {
		if tn.Name != tensors[i].Name || len(tn.Dims) != 1 || tn.Dims[0] != 1 || tn.Offset != uint64(i*32) {
			t.Errorf("tensor %d = %+v", i, tn)
		}
	}
	if StubName("model-00001-of-00009.gguf") != "model-00001-of-00009.vocab.gguf" || StubName("x.vocab.gguf") != "x.vocab.gguf" {
		t.Error("StubName")
	}
	// A shard without a vocabulary (shard 2) is refused with a reason.
	src2 := filepath.Join(dir, "model-00002-of-00009.gguf")
	writeFile(t, src2, kvs[:2], nil, nil)
	if err := WriteVocabStub(src2, &out); err == nil {
		t.Fatal("a shard without vocabulary made a stub")
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []KV{Uint32(ProjectionDimKey, 8), Strings("a", []string{"x", "y"})},
		[]Tensor{{Name: "t", Dims: []uint64{2}, Type: 0}}, 32, func(Tensor) uint64 { return 8 })
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		g.Int(ProjectionDimKey)
		g.String("a")
		g.Alignment()
		// Round trip: what was read, written again, reads back the same
		// (offsets are recomputed: all 0 with no data).
		var out bytes.Buffer
		if err := Write(&out, g.KVs, g.Tensors, 32, func(Tensor) uint64 { return 0 }); err != nil {
			t.Fatal(err)
		}
		h, err := Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("a header read back from its own writing fails: %v", err)
		}
		sameHeader(t, g, h, func(int) uint64 { return 0 })
	})
}

// sameHeader compares two headers; offset(i) is the i-th tensor's expected
// offset in h.
func sameHeader(t *testing.T, g, h *File, offset func(int) uint64) {
	t.Helper()
	if len(g.KVs) != len(h.KVs) || len(g.Tensors) != len(h.Tensors) {
		t.Fatalf("counts: %d/%d kvs, %d/%d tensors", len(g.KVs), len(h.KVs), len(g.Tensors), len(h.Tensors))
	}
	for i := range g.KVs {
		a, b := g.KVs[i], h.KVs[i]
		if a.Key != b.Key || a.Type != b.Type || !bytes.Equal(a.Raw, b.Raw) {
			t.Fatalf("kv %d: %q/%d/%x != %q/%d/%x", i, a.Key, a.Type, a.Raw, b.Key, b.Type, b.Raw)
		}
	}
	for i := range g.Tensors {
		a, b := g.Tensors[i], h.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || fmt.Sprint(a.Dims) != fmt.Sprint(b.Dims) || b.Offset != offset(i) {
			t.Fatalf("tensor %d: %+v != %+v (offset want %d)", i, a, b, offset(i))
		}
	}
}

// Write then Read gives back every entry and tensor, with the values the
// accessors see and offsets laid out by the data sizes and the alignment.
func FuzzWriteRead(f *testing.F) {
	f.Add("general.architecture", "clip", uint32(2560), "v.patch_embd.weight", uint64(16), uint64(16), uint32(0), uint16(1000), "tok")
	f.Add("", "", uint32(0), "", uint64(0), uint64(1<<40), uint32(30), uint16(0), "")
	f.Fuzz(func(t *testing.T, key, val string, n uint32, name string, d1, d2 uint64, typ uint32, size uint16, tok string) {
		if key == ProjectionDimKey || key == "tokens" {
			key += ".x"
		}
		kvs := []KV{String(key, val), Uint32(ProjectionDimKey, n), Strings("tokens", []string{tok, val, ""})}
		tensors := []Tensor{{Name: name, Dims: []uint64{d1, d2}, Type: typ}, {Name: name + "2", Type: typ}}
		sizes := []uint64{uint64(size), 3}
		var buf bytes.Buffer
		i := 0
		if err := Write(&buf, kvs, tensors, 32, func(Tensor) uint64 { s := sizes[i]; i++; return s }); err != nil {
			t.Fatal(err)
		}
		g, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("reading what Write wrote: %v", err)
		}
		sameHeader(t, &File{KVs: kvs, Tensors: tensors}, g, func(i int) uint64 {
			if i == 0 {
				return 0
			}
			return pad(sizes[0], 32)
		})
		if got, ok := g.String(key); !ok || got != val {
			t.Fatalf("String(%q) = %q, %v; want %q", key, got, ok, val)
		}
		if got, ok := g.Int(ProjectionDimKey); !ok || got != int64(n) {
			t.Fatalf("Int = %d, %v; want %d", got, ok, n)
		}
		if want := len(buf.Bytes()); want%32 != 0 {
			t.Fatalf("file length %d is not aligned", want)
		}
	})
}
