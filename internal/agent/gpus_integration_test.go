//go:build linux

package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/testenv"
)

// twoCardPC puts the stand-in nvidia-smi with two cards first on PATH (the
// agent finds it there as the probe does; the stand-in encoder claims its
// VRAM through it on the card CUDA would give it).
func twoCardPC(t *testing.T) string {
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, []string{"NVIDIA GeForce RTX 4090,24564", "NVIDIA GeForce RTX 3060,12288"})
	t.Setenv("PATH", smi+string(os.PathListSeparator)+os.Getenv("PATH"))
	return smi
}

func startedWhere(t *testing.T, s *session) *framing.Where {
	t.Helper()
	s.w.Write(framing.Encode, framing.PutID(1), png)
	var evs []framing.AgentEvent
	if typ, _ := s.nextSkipping(&evs); typ != framing.Result || len(evs) != 1 || evs[0].Where == nil {
		t.Fatalf("first picture: %q, events %+v", typ, evs)
	}
	return evs[0].Where
}

// TestObservedCardIsTheEncoders: with two cards, the card the agent names
// and measures is the one the encoder runs on: the chosen cuda_device, else
// card 0 in PCI order; the VRAM it reports is what the encoder took there.
// The idle stop gives it back, the wake takes it again.
func TestObservedCardIsTheEncoders(t *testing.T) {
	twoCardPC(t)
	_, enc, mm, model := buildStandin(t, "")
	for _, c := range []struct {
		name string
		cfg  Config
		idx  int
		card string
	}{
		{"no card chosen: card 0", Config{}, 0, "NVIDIA GeForce RTX 4090"},
		{"card 1 chosen", Config{CUDADevice: 1, CUDADeviceSet: true}, 1, "NVIDIA GeForce RTX 3060"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Encoder, cfg.Mmproj, cfg.Model, cfg.GPU, cfg.MaxTokens, cfg.IdleStop, cfg.ScratchParent = enc, mm, model, true, 4, time.Second, t.TempDir()
			s := start(t, cfg)
			w := startedWhere(t, s)
			if v, ok := w.VRAM(); w.Device != "gpu" || w.GPUIndex != c.idx || w.GPU != c.card || !ok || v != fakeencoder.GPUVRAMMiB {
				t.Fatalf("where %+v: want card %d %s with %d MiB", w, c.idx, c.card, fakeencoder.GPUVRAMMiB)
			}
			used := func() int { return s.status().GPUs[c.idx].UsedMiB }
			if u := used(); u != 412+fakeencoder.GPUVRAMMiB {
				t.Errorf("card %d uses %d MiB while the encoder runs", c.idx, u)
			}
			typ, p := s.next() // the idle stop
			var e framing.AgentEvent
			if json.Unmarshal(p, &e); typ != framing.Event || e.Kind != "idle_stopped" {
				t.Fatalf("expected the idle stop, got %q %s", typ, p)
			}
			if u := used(); u != 412 {
				t.Errorf("card %d uses %d MiB after the idle stop; want 412 (the VRAM given back)", c.idx, u)
			}
			if w := startedWhere(t, s); w.GPUIndex != c.idx || w.VRAMMiB != fakeencoder.GPUVRAMMiB {
				t.Errorf("after the wake: %+v", w)
			}
		})
	}
}

// TestMIGCardNamed: a card split into MIG slices is reported as such.
func TestMIGCardNamed(t *testing.T) {
	smi := twoCardPC(t)
	testenv.SetGPUs(t, smi, []string{"NVIDIA A100-SXM4-80GB,81920,mig"})
	s := start(t, Config{ScratchParent: t.TempDir()})
	st := s.status()
	if len(st.GPUs) != 1 || !st.GPUs[0].MIG || st.GPUs[0].TotalMiB != 81920 {
		t.Fatalf("status GPUs %+v", st.GPUs)
	}
}

// TestHungNvidiaSMIDoesNotStallFrames: with an nvidia-smi that never
// answers, a status comes back within its bound (no GPUs, rather than
// none at all) and the frame loop goes on answering.
func TestHungNvidiaSMIDoesNotStallFrames(t *testing.T) {
	smi := filepath.Join(t.TempDir(), "nvidia-smi")
	testenv.WriteExecutable(smi, []byte("#!/bin/sh\nexec sleep 300\n"))
	s := start(t, Config{ScratchParent: t.TempDir(), NvidiaSMI: smi})
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		st := s.status()
		t.Logf("status %d with a hung nvidia-smi took %s", i, time.Since(t0).Round(time.Millisecond))
		if len(st.GPUs) != 0 || !strings.Contains(st.GPUProblem, "did not answer in time") {
			t.Fatalf("GPUs %+v from a hung nvidia-smi; problem %q", st.GPUs, st.GPUProblem)
		}
		if time.Since(t0) > 20*time.Second {
			t.Fatal("a status waited on the hung nvidia-smi")
		}
	}
	s.w.Write(framing.Ping, []byte("x"))
	if typ, p := s.next(); typ != framing.Pong || string(p) != "x" {
		t.Fatalf("after the statuses: %q %q", typ, p)
	}
}
