package relay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-companion/companion/internal/gguf"
)

// writeProjector writes an mmproj GGUF with n_embd and, when set, a
// general.basename.
func writeProjector(t *testing.T, path string, nEmbd uint32, basename string) {
	t.Helper()
	kvs := []gguf.KV{gguf.Uint32(gguf.ProjectionDimKey, nEmbd)}
	if basename != "" {
		kvs = append(kvs, gguf.String("general.basename", basename))
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, kvs, nil, 32, func(gguf.Tensor) uint64 { return 0 }); err != nil {
		t.Fatal(err)
	}
}

// Issue 34: two models of one family (the same n_embd) in one folder: the
// CPU gets a model's own Q8_0 projector, never the neighbour's.
func TestCPUProjectorIsTheModelsOwn(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "mmproj-Strata-Coder-BF16.gguf")
	writeProjector(t, a, 2560, "")
	writeProjector(t, filepath.Join(dir, "mmproj-Strata-Swift-Q8_0.gguf"), 2560, "")
	if got := CPUProjector(a); got != a {
		t.Fatalf("the coder's projector on the CPU is %s, another model's", filepath.Base(got))
	}
	own := filepath.Join(dir, "mmproj-Strata-Coder-Q8_0.gguf")
	writeProjector(t, own, 2560, "")
	if got := CPUProjector(a); got != own {
		t.Fatalf("the coder's own Q8_0 is not chosen: %s", filepath.Base(got))
	}

	// Named differently, tied by the GGUF metadata.
	dir2 := t.TempDir()
	b := filepath.Join(dir2, "mmproj-model-BF16.gguf")
	writeProjector(t, b, 4096, "Strata-Swift")
	q := filepath.Join(dir2, "mmproj-q8_0-for-swift.gguf")
	writeProjector(t, q, 4096, "Strata-Swift")
	if got := CPUProjector(b); got != q {
		t.Fatalf("a Q8_0 tied by general.basename is not chosen: %s", filepath.Base(got))
	}
	// Names that differ only by their precision: the model's own.
	dir3 := t.TempDir()
	plain := filepath.Join(dir3, "mmproj-BF16.gguf")
	writeProjector(t, plain, 2560, "")
	plainQ8 := filepath.Join(dir3, "mmproj-Q8_0.gguf")
	writeProjector(t, plainQ8, 2560, "")
	if got := CPUProjector(plain); got != plainQ8 {
		t.Fatalf("mmproj-Q8_0 beside mmproj-BF16 is not chosen: %s", filepath.Base(got))
	}
	// The same name but another width: not the model's.
	c := filepath.Join(dir2, "mmproj-Other-BF16.gguf")
	writeProjector(t, c, 1024, "")
	writeProjector(t, filepath.Join(dir2, "mmproj-Other-Q8_0.gguf"), 2048, "")
	if got := CPUProjector(c); got != c {
		t.Fatalf("a Q8_0 of another width was chosen: %s", filepath.Base(got))
	}
}
