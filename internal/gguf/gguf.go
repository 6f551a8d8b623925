// Package gguf reads the metadata of GGUF model files (the format of Strata's
// mmproj and text model shards) and builds a vocabulary-only stub of a text
// model: the same metadata and vocabulary with tiny tensors, which is all
// strata-vision needs on a second PC (it opens the text model vocab-only), so
// ~11 MB travel there instead of a 50+ GB model.
//
// Only the header is read: a reader never touches the tensor data, so opening
// shard 1 of a huge model is instant.
package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Magic starts every GGUF file.
const Magic = "GGUF"

// ValueType is a metadata value's type.
type ValueType uint32

// The GGUF value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var fixedSize = map[ValueType]int{
	TypeUint8: 1, TypeInt8: 1, TypeBool: 1, TypeUint16: 2, TypeInt16: 2,
	TypeUint32: 4, TypeInt32: 4, TypeFloat32: 4, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

// KV is one metadata entry. Raw is the value's encoding exactly as in the
// file (after the type), so a stub can copy it unchanged.
type KV struct {
	Key  string
	Type ValueType
	Raw  []byte
}

// Tensor is one tensor's description (its data is never read).
type Tensor struct {
	Name   string
	Dims   []uint64
	Type   uint32 // ggml type
	Offset uint64
}

// File is a GGUF header.
type File struct {
	Version uint32
	KVs     []KV
	Tensors []Tensor
}

// Limits that keep a corrupt or hostile header from allocating gigabytes.
const (
	maxString  = 1 << 20   // one key or string value
	maxArray   = 1 << 24   // entries in one array (vocabularies are ~150k-260k)
	maxKVs     = 1 << 16   // metadata entries
	maxTensors = 1 << 20   // tensor descriptions
	maxDims    = 8         // ggml has 4; be lenient
	maxHeader  = 256 << 20 // total metadata bytes kept
)

// ReadFile reads path's header.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := Read(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s is not a readable GGUF file: %w", path, err)
	}
	return g, nil
}

type reader struct {
	r    io.Reader
	raw  *bytes.Buffer // when non-nil, every byte read is copied here
	kept int
}

func (r *reader) read(n int) ([]byte, error) {
	r.kept += n
	if r.kept > maxHeader {
		return nil, errors.New("metadata larger than 256 MiB")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if r.raw != nil {
		r.raw.Write(b)
	}
	return b, nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > maxString {
		return "", fmt.Errorf("a string of %d bytes", n)
	}
	b, err := r.read(int(n))
	return string(b), err
}

func (r *reader) value(t ValueType, depth int) error {
	if n, ok := fixedSize[t]; ok {
		_, err := r.read(n)
		return err
	}
	switch t {
	case TypeString:
		_, err := r.str()
		return err
	case TypeArray:
		if depth > 2 {
			return errors.New("arrays nested too deep")
		}
		et, err := r.u32()
		if err != nil {
			return err
		}
		n, err := r.u64()
		if err != nil {
			return err
		}
		if n > maxArray {
			return fmt.Errorf("an array of %d entries", n)
		}
		if sz, ok := fixedSize[ValueType(et)]; ok {
			_, err := r.read(int(n) * sz)
			return err
		}
		for i := uint64(0); i < n; i++ {
			if err := r.value(ValueType(et), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown value type %d", t)
}

// Read reads a GGUF header (version 2 or 3) from r.
func Read(in io.Reader) (*File, error) {
	r := &reader{r: in}
	magic, err := r.read(4)
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("it starts with %q, not %q", magic, Magic)
	}
	g := &File{}
	if g.Version, err = r.u32(); err != nil {
		return nil, err
	}
	if g.Version < 2 || g.Version > 3 {
		return nil, fmt.Errorf("GGUF version %d is not supported (2 and 3 are)", g.Version)
	}
	nt, err := r.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := r.u64()
	if err != nil {
		return nil, err
	}
	if nt > maxTensors || nkv > maxKVs {
		return nil, fmt.Errorf("implausible counts: %d tensors, %d metadata entries", nt, nkv)
	}
	for i := uint64(0); i < nkv; i++ {
		key, err := r.str()
		if err != nil {
			return nil, err
		}
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		r.raw = &bytes.Buffer{}
		err = r.value(ValueType(t), 0)
		raw := r.raw.Bytes()
		r.raw = nil
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		g.KVs = append(g.KVs, KV{Key: key, Type: ValueType(t), Raw: raw})
	}
	for i := uint64(0); i < nt; i++ {
		var tn Tensor
		if tn.Name, err = r.str(); err != nil {
			return nil, err
		}
		nd, err := r.u32()
		if err != nil {
			return nil, err
		}
		if nd > maxDims {
			return nil, fmt.Errorf("tensor %q has %d dimensions", tn.Name, nd)
		}
		for d := uint32(0); d < nd; d++ {
			v, err := r.u64()
			if err != nil {
				return nil, err
			}
			tn.Dims = append(tn.Dims, v)
		}
		if tn.Type, err = r.u32(); err != nil {
			return nil, err
		}
		if tn.Offset, err = r.u64(); err != nil {
			return nil, err
		}
		g.Tensors = append(g.Tensors, tn)
	}
	return g, nil
}

// Get returns the entry for key.
func (g *File) Get(key string) (KV, bool) {
	for _, kv := range g.KVs {
		if kv.Key == key {
			return kv, true
		}
	}
	return KV{}, false
}

// Int reads an integer entry of any integer type.
func (g *File) Int(key string) (int64, bool) {
	kv, ok := g.Get(key)
	if !ok {
		return 0, false
	}
	b := kv.Raw
	switch kv.Type {
	case TypeUint8:
		return int64(b[0]), true
	case TypeInt8:
		return int64(int8(b[0])), true
	case TypeUint16:
		return int64(binary.LittleEndian.Uint16(b)), true
	case TypeInt16:
		return int64(int16(binary.LittleEndian.Uint16(b))), true
	case TypeUint32:
		return int64(binary.LittleEndian.Uint32(b)), true
	case TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case TypeUint64:
		v := binary.LittleEndian.Uint64(b)
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}

// String reads a string entry.
func (g *File) String(key string) (string, bool) {
	kv, ok := g.Get(key)
	if !ok || kv.Type != TypeString || len(kv.Raw) < 8 {
		return "", false
	}
	return string(kv.Raw[8:]), true
}

// ProjectionDimKey holds an mmproj's output width: Strata's n_embd.
const ProjectionDimKey = "clip.vision.projection_dim"

// NEmbd reads n_embd (clip.vision.projection_dim) from an mmproj file.
func NEmbd(mmproj string) (int, error) {
	g, err := ReadFile(mmproj)
	if err != nil {
		return 0, err
	}
	v, ok := g.Int(ProjectionDimKey)
	if !ok || v <= 0 || v > 1<<20 {
		return 0, fmt.Errorf("%s has no %s; is it a vision projector (mmproj)?", mmproj, ProjectionDimKey)
	}
	return int(v), nil
}

// Alignment is general.alignment, default 32.
func (g *File) Alignment() int {
	if v, ok := g.Int("general.alignment"); ok && v > 0 && v&(v-1) == 0 && v <= 1<<16 {
		return int(v)
	}
	return 32
}

// Encoder helpers for building entries (tests, and the stub's own entries).

// Uint32 makes a uint32 entry.
func Uint32(key string, v uint32) KV {
	return KV{Key: key, Type: TypeUint32, Raw: binary.LittleEndian.AppendUint32(nil, v)}
}

// String makes a string entry.
func String(key, v string) KV {
	return KV{Key: key, Type: TypeString, Raw: appendString(nil, v)}
}

// Strings makes an array-of-strings entry (a vocabulary).
func Strings(key string, vs []string) KV {
	b := binary.LittleEndian.AppendUint32(nil, uint32(TypeString))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(vs)))
	for _, v := range vs {
		b = appendString(b, v)
	}
	return KV{Key: key, Type: TypeArray, Raw: b}
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// ggml type ids used here.
const ggmlF32 = 0

// Write writes a GGUF v3 file with kvs and tensors whose data is zero;
// each tensor's data size is dataSize(t) bytes. Offsets are recomputed.
func Write(w io.Writer, kvs []KV, tensors []Tensor, align int, dataSize func(Tensor) uint64) error {
	bw := bufio.NewWriter(w)
	var b []byte
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(tensors)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(kvs)))
	for _, kv := range kvs {
		b = appendString(b, kv.Key)
		b = binary.LittleEndian.AppendUint32(b, uint32(kv.Type))
		b = append(b, kv.Raw...)
	}
	var off uint64
	sizes := make([]uint64, len(tensors))
	for i, t := range tensors {
		b = appendString(b, t.Name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			b = binary.LittleEndian.AppendUint64(b, d)
		}
		b = binary.LittleEndian.AppendUint32(b, t.Type)
		b = binary.LittleEndian.AppendUint64(b, off)
		sizes[i] = dataSize(t)
		off += pad(sizes[i], align)
	}
	b = append(b, make([]byte, pad(uint64(len(b)), align)-uint64(len(b)))...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	zero := make([]byte, 64<<10)
	for _, s := range sizes {
		for n := pad(s, align); n > 0; {
			k := min(n, uint64(len(zero)))
			if _, err := bw.Write(zero[:k]); err != nil {
				return err
			}
			n -= k
		}
	}
	return bw.Flush()
}

func pad(n uint64, align int) uint64 {
	a := uint64(align)
	return (n + a - 1) / a * a
}

// StubName is the remote file name of the vocabulary stub built from a
// model shard: "X-00001-of-00009.gguf" -> "X-00001-of-00009.vocab.gguf"
// (a name that already ends in .vocab.gguf is kept).
func StubName(modelBase string) string {
	if strings.HasSuffix(modelBase, ".vocab.gguf") {
		return modelBase
	}
	return strings.TrimSuffix(modelBase, ".gguf") + ".vocab.gguf"
}

// WriteVocabStub writes the vocabulary-only stub of the text model shard at
// src to dst (atomically is the caller's business: it writes to dst as
// given). Every metadata entry is kept except split.* (the stub is one whole
// file: a loader seeing split.count would look for the other shards); every
// tensor keeps its name but becomes a 1-element F32, so a loader that opens
// the file vocab-only (strata-vision does) sees the same model and vocabulary
// and reads a few kilobytes of tensor data.
func WriteVocabStub(src string, dst io.Writer) error {
	g, err := ReadFile(src)
	if err != nil {
		return err
	}
	if _, ok := g.Get("tokenizer.ggml.tokens"); !ok {
		return fmt.Errorf("%s has no vocabulary (tokenizer.ggml.tokens); use the text model's first shard", src)
	}
	var kvs []KV
	for _, kv := range g.KVs {
		if strings.HasPrefix(kv.Key, "split.") {
			continue
		}
		kvs = append(kvs, kv)
	}
	tensors := make([]Tensor, len(g.Tensors))
	for i, t := range g.Tensors {
		tensors[i] = Tensor{Name: t.Name, Dims: []uint64{1}, Type: ggmlF32}
	}
	return Write(dst, kvs, tensors, g.Alignment(), func(Tensor) uint64 { return 4 })
}

// projectorPrecision are the parts of a projector's file name that say its
// precision (or that it is a projector), not its model.
var projectorPrecision = map[string]bool{"mmproj": true, "q8_0": true, "q8": true, "0": true, "bf16": true, "f16": true, "f32": true, "fp16": true, "fp32": true, "gguf": true}

// ProjectorStem is a projector's file name without "mmproj", its precision
// and the extension: the model it names ("qwen3.5-122b-a10b"; "" for a
// bare mmproj-BF16.gguf). Two projectors with one stem differ only by
// their precision: one model's. The relay and the config planner both
// judge "the model's own projector" by it.
func ProjectorStem(p string) string {
	b := p
	if i := strings.LastIndexAny(b, `/\`); i >= 0 {
		b = b[i+1:]
	}
	if i := strings.LastIndex(b, "."); i > 0 {
		b = b[:i]
	}
	var keep []string
	for _, w := range strings.FieldsFunc(strings.ToLower(b), func(r rune) bool { return r == '-' || r == '_' }) {
		if !projectorPrecision[w] {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, "-")
}
