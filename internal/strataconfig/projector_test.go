package strataconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
)

// Issue 34: a projector named for another model in the models folder is
// never given to this one: not found for a config with no vision block,
// not taken as "the Q8_0 beside it" for the CPU.
func TestAnotherModelsProjectorIsNeverTaken(t *testing.T) {
	in, base := fixture(t, "novision-4space-env.json", false)
	models := filepath.Join(in.Root, "models")
	// Only another model's projector remains beside this model's files.
	for _, f := range []string{fakestrata.MMProjBF16, fakestrata.MMProjQ8} {
		os.Remove(filepath.Join(models, f))
	}
	other := filepath.Join(models, "mmproj-Strata-Swift-BF16.gguf")
	os.WriteFile(other, []byte("GGUF"), 0o644)
	r := req(base, settings.PlacementGPU)
	r.VRAMTotalMiB = 12288
	if ch, err := PlanVision(in.Config, r); err == nil {
		t.Fatalf("another model's projector was taken:\n%s", ch.Diff())
	}

	// The model's own BF16 and another model's Q8_0: the CPU keeps the BF16.
	own := filepath.Join(models, fakestrata.MMProjBF16)
	os.WriteFile(own, []byte("GGUF"), 0o644)
	os.WriteFile(filepath.Join(models, "mmproj-Strata-Swift-Q8_0.gguf"), []byte("GGUF"), 0o644)
	apply(t, in.Config, r)
	apply(t, in.Config, req(base, settings.PlacementCPU))
	c, err := Read(in.Config)
	if err != nil || c.Vision == nil {
		t.Fatal(err)
	}
	if filepath.Base(c.Vision.MMProj) != fakestrata.MMProjBF16 {
		t.Fatalf("the CPU got %s, not the model's own projector", c.Vision.MMProj)
	}
}
