package strataconfig

import (
	"os"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
)

func newInstall(b *testing.B, config string) string {
	return fakestrata.NewInstall(b, "", fakestrata.InstallOptions{Config: config}).Config
}

// BenchmarkPlanVision is one whole `vision cpu` plan on a real-shaped config:
// read, validate, edit, re-validate, check the files named.
func BenchmarkPlanVision(b *testing.B) {
	text, _ := os.ReadFile("testdata/gpu-2space.json")
	in := newInstall(b, string(text))
	r := VisionRequest{Placement: settings.PlacementCPU, Threads: 4}
	for b.Loop() {
		if _, err := PlanVision(in, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse is the span parser on the same file.
func BenchmarkParse(b *testing.B) {
	text, _ := os.ReadFile("testdata/gpu-2space.json")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := parse(text); err != nil {
			b.Fatal(err)
		}
	}
}
