//go:build linux

package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// NvidiaSMI puts the stand-in nvidia-smi (cmd/nvidia-smi-standin) into dir,
// so that a PC whose PATH has dir has an NVIDIA GPU: gpus are its lines
// ("NAME,TOTAL_MIB", with ",mig" after it for a card split into MIG
// slices; nil: one RTX 3060 Laptop GPU, 6 GB). SetGPUs changes them later
// ("that GPU gone").
func NvidiaSMI(t testing.TB, dir string, gpus []string) {
	t.Helper()
	if err := BuildGo(filepath.Join(dir, "nvidia-smi"), "github.com/strata-companion/companion/internal/testenv/cmd/nvidia-smi-standin", runtime.GOOS, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	if gpus != nil {
		SetGPUs(t, dir, gpus)
	}
}

// SetGPUs changes the GPUs the stand-in nvidia-smi in dir reports; none
// (an empty list) is a PC whose driver finds no GPU.
func SetGPUs(t testing.TB, dir string, gpus []string) {
	t.Helper()
	body := strings.Join(gpus, "\n")
	if len(gpus) == 0 {
		body = "none"
	}
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi.gpus"), []byte(body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
