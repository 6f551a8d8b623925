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
		if err == nil {
			g.Int(ProjectionDimKey)
			g.String("a")
			g.Alignment()
		}
	})
}
