package measure

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
)

func fakeExe(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "strata-vision")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	return p
}

// TestPlansStartWhatTheProductStarts: each placement's trial runs the
// program the product would run, with its arguments.
func TestPlansStartWhatTheProductStarts(t *testing.T) {
	in := newInstall(t, fakeExe(t), false)
	st := &settings.Settings{CPUThreads: 3}
	cpu, err := CPU(in.inputs(t, st))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--mmproj", in.mmproj, "--model", in.model, "--threads", "3", "--max-tokens", "300"}
	if !slices.Equal(cpu.Args, want) || cpu.Exe != filepath.Join(in.root, "engine", "strata-vision") || cpu.StrataVersion != "0.9.3" {
		t.Errorf("cpu trial %s %q (version %q), want %q", cpu.Exe, cpu.Args, cpu.StrataVersion, want)
	}
	if cpu.Device != "this PC's CPU, 3 threads" {
		t.Errorf("cpu device %q", cpu.Device)
	}
	// The Q8_0 projector beside the BF16 one is the CPU's (Strata's advice).
	q8 := filepath.Join(in.root, "mmproj-Q8_0.gguf")
	copyFile(t, in.mmproj, q8)
	cpu, _ = CPU(in.inputs(t, st))
	if cpu.Args[1] != q8 {
		t.Errorf("cpu trial projector %s, want the Q8_0 one", cpu.Args[1])
	}

	gpus := []probe.GPU{{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 4080", TotalMiB: 16376, FreeMiB: 9000, Driver: "581.57", ComputeCap: "8.9"}, Vendor: probe.VendorNVIDIA, Source: probe.SourceNvidiaSMI}}
	inp := in.inputs(t, st)
	inp.GPUs = gpus
	gpu, err := GPU(inp)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"--mmproj", in.mmproj, "--model", in.model, "--gpu", "--max-tokens", "1024"}
	if !slices.Equal(gpu.Args, want) || !slices.Contains(gpu.Env, "CUDA_VISIBLE_DEVICES=0") {
		t.Errorf("gpu trial %q env %q, want %q", gpu.Args, gpu.Env, want)
	}

	relayExe := fakeExe(t)
	inp.RelayExe = relayExe
	inp.Settings = &settings.Settings{Vision: settings.PlacementCPU, FallbackCPU: ptr(true),
		Remote: &settings.Remote{Host: "gpu-laptop", RemoteDir: "/opt/strata-remote", GPUs: []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144}}}}
	rm, err := Remote(inp)
	if err != nil {
		t.Fatal(err)
	}
	if rm.Exe != relayExe || !slices.Equal(rm.Args, []string{"--mmproj", in.mmproj, "--model", in.model}) || !rm.Relay {
		t.Errorf("remote trial %s %q", rm.Exe, rm.Args)
	}
	if rm.RelaySettings.Vision != settings.PlacementRemote || rm.RelaySettings.FallbackCPU != nil || rm.RelaySettings.Remote.Host != "gpu-laptop" {
		t.Errorf("the relay's settings copy: %+v", rm.RelaySettings)
	}
	if inp.Settings.Vision != settings.PlacementCPU || inp.Settings.FallbackCPU == nil {
		t.Error("planning changed the caller's settings")
	}
	if rm.Device != "the second PC gpu-laptop (NVIDIA GeForce RTX 3060 Laptop GPU)" {
		t.Errorf("remote device %q", rm.Device)
	}
}

func ptr[T any](v T) *T { return &v }

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(to, b, 0o644)
}

// TestBadCasesAreSaidBeforeAnythingStarts: each case a plan refuses, with
// its kind and words that say what to do.
func TestBadCasesAreSaidBeforeAnythingStarts(t *testing.T) {
	rtx := func(free int) []probe.GPU {
		return []probe.GPU{{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 3060", TotalMiB: 12288, FreeMiB: free, Driver: "581.57", ComputeCap: "8.6"}, Vendor: probe.VendorNVIDIA, Source: probe.SourceNvidiaSMI}}
	}
	paired := &settings.Remote{Host: "gpu-laptop"}
	prepared := &settings.Remote{Host: "gpu-laptop", RemoteDir: "/opt/r"}
	cases := []struct {
		name  string
		setup func(t *testing.T, in install, inp *Inputs)
		plan  func(Inputs) (*Trial, error)
		kind  Kind
		words string
	}{
		{"no encoder", func(t *testing.T, in install, inp *Inputs) {
			os.Remove(filepath.Join(in.root, "engine", "strata-vision"))
		}, CPU, KindNoEncoder, "run Strata's setup again"},
		{"no projector", func(t *testing.T, in install, inp *Inputs) { os.Remove(in.mmproj) }, CPU, KindNoProjector, "mmproj"},
		{"pictures off in the config", func(t *testing.T, in install, inp *Inputs) { inp.Config.Vision = nil }, CPU, KindNoProjector, "pictures turned off"},
		{"no config", func(t *testing.T, in install, inp *Inputs) { inp.Config = nil }, CPU, KindNoEncoder, "choose Strata's folder"},
		{"no GPU", func(t *testing.T, in install, inp *Inputs) {}, GPU, KindNoGPU, "no NVIDIA GPU"},
		{"an old GPU", func(t *testing.T, in install, inp *Inputs) {
			inp.GPUs = []probe.GPU{{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce GTX 1080", TotalMiB: 8192, FreeMiB: 8000, Driver: "581.57", ComputeCap: "6.1"}, Vendor: probe.VendorNVIDIA, Source: probe.SourceNvidiaSMI}}
		}, GPU, KindNoGPU, "RTX 20"},
		{"GPU without room, Strata running", func(t *testing.T, in install, inp *Inputs) { inp.GPUs, inp.StrataRunning = rtx(900), true }, GPU, KindNoRoom, "Strata is running and holds that memory"},
		{"GPU without room", func(t *testing.T, in install, inp *Inputs) { inp.GPUs = rtx(900) }, GPU, KindNoRoom, "close the programs that use the GPU"},
		{"not paired", func(t *testing.T, in install, inp *Inputs) {}, Remote, KindNotPaired, "pair one on the second-PC page"},
		{"not prepared", func(t *testing.T, in install, inp *Inputs) { inp.Settings.Remote = paired }, Remote, KindNotPrepared, "prepare it on the second-PC page"},
		{"no relay", func(t *testing.T, in install, inp *Inputs) {
			inp.Settings.Remote, inp.RelayExe = prepared, filepath.Join(in.root, "nowhere", "strata-vision-relay")
		}, Remote, KindNoEncoder, "reinstall Strata Companion"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := newInstall(t, fakeExe(t), false)
			inp := in.inputs(t, nil)
			c.setup(t, in, &inp)
			tr, err := c.plan(inp)
			if err == nil {
				t.Fatalf("planned %+v", tr)
			}
			if KindOf(err) != c.kind || !strings.Contains(err.Error(), c.words) {
				t.Errorf("got %s: %v; want %s saying %q", KindOf(err), err, c.kind, c.words)
			}
			if strings.Contains(err.Error(), "--") {
				t.Errorf("a flag in words for a person: %v", err)
			}
		})
	}
}
