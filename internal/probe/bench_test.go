//go:build !windows

package probe

import (
	"context"
	"testing"
)

func BenchmarkParseNvidiaSMIEight(b *testing.B) {
	out := []byte(smiEight())
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if _, err := ParseNvidiaSMI(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProbeWithFakeNvidiaSMI is a whole probe: starting nvidia-smi (a
// shell script here), sysfs, /proc. A real nvidia-smi adds its own 50-500 ms
// of driver queries on top.
func BenchmarkProbeWithFakeNvidiaSMI(b *testing.B) {
	fakeSMI(b, printing(smiTwo, 0))
	o := Options{SearchPaths: []string{}}
	for b.Loop() {
		if r := Probe(context.Background(), o); len(r.GPUs) < 2 {
			b.Fatalf("%+v", r)
		}
	}
}
