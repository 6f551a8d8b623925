//go:build linux

package fakeencoder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

// TestGPUNeedsAGPU: --gpu on a PC without an NVIDIA GPU (no nvidia-smi, or
// one that finds none, or CUDA_VISIBLE_DEVICES hiding it) prints ggml's CUDA
// failure and reads on the CPU; with the stand-in nvidia-smi's GPU it warms up
// without that line and holds its VRAM there while it runs.
func TestGPUNeedsAGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in nvidia-smi")
	}
	_, mm, model := files(t)
	smi := t.TempDir()
	t.Setenv("PATH", smi+string(os.PathListSeparator)+os.Getenv("PATH"))
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	gpuStart := func() (*run, string) {
		r, first := startRun(t, "--mmproj", mm, "--model", model, "--gpu", "--max-tokens", "8")
		if first != "READY 64" {
			t.Fatalf("first line %q (%s)", first, r.errb.String())
		}
		return r, r.errb.String()
	}
	used := func() string {
		out, err := exec.Command(filepath.Join(smi, "nvidia-smi"), "--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version", "--format=csv,noheader,nounits").CombinedOutput()
		if err != nil {
			return "error: " + strings.TrimSpace(string(out))
		}
		return strings.TrimSpace(strings.Split(string(out), ",")[3])
	}

	// No nvidia-smi on the PATH yet: no driver, no GPU.
	r, stderr := gpuStart()
	if stderr != CUDAInitFailed+"\nstrata-vision: warmed up at 8 image tokens\n" {
		t.Errorf("no driver: stderr %q", stderr)
	}
	r.quit(t)

	testenv.NvidiaSMI(t, smi, nil)
	if u := used(); u != "412" {
		t.Fatalf("idle GPU used %s MiB", u)
	}
	r, stderr = gpuStart()
	if stderr != "strata-vision: warmed up at 8 image tokens\n" {
		t.Errorf("with a GPU: stderr %q", stderr)
	}
	if u := used(); u != "1795" {
		t.Errorf("with the encoder warmed up the GPU has %s MiB used, want 412 + %d", u, GPUVRAMMiB)
	}
	r.quit(t)
	if u := used(); u != "412" {
		t.Errorf("after the encoder quit the GPU has %s MiB used", u)
	}

	t.Setenv("CUDA_VISIBLE_DEVICES", "-1")
	r, stderr = gpuStart()
	if !strings.HasPrefix(stderr, CUDAInitFailed) {
		t.Errorf("CUDA_VISIBLE_DEVICES=-1: stderr %q", stderr)
	}
	r.quit(t)
	os.Unsetenv("CUDA_VISIBLE_DEVICES")

	testenv.SetGPUs(t, smi, nil) // the driver finds no GPU
	if u := used(); !strings.Contains(u, "No devices were found") {
		t.Errorf("no GPU: nvidia-smi said %q", u)
	}
	r, stderr = gpuStart()
	if !strings.HasPrefix(stderr, CUDAInitFailed) {
		t.Errorf("no GPU found: stderr %q", stderr)
	}
	r.quit(t)
}
