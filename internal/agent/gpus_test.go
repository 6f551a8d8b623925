package agent

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/nvsmi"
)

func reading(fresh bool, gs ...nvsmi.GPU) gpuReading { return gpuReading{gpus: gs, fresh: fresh} }

// TestMeasure: the card measured is the encoder's (the chosen index, else
// 0); its VRAM is known only from two fresh readings with figures; a
// measured 0 is kept as a figure.
func TestMeasure(t *testing.T) {
	card := func(idx, used int) nvsmi.GPU {
		return nvsmi.GPU{Index: idx, Name: "card" + string(rune('0'+idx)), UsedMiB: used}
	}
	gpu := framing.Where{Device: "gpu"}
	cases := []struct {
		name          string
		idx           int
		before, after gpuReading
		wantName      string
		wantVRAM      int
		wantKnown     bool
		wantMIG       bool
	}{
		{"card 0", 0, reading(true, card(0, 400), card(1, 10)), reading(true, card(0, 1783), card(1, 900)), "card0", 1383, true, false},
		{"the chosen card 1, not card 0", 1, reading(true, card(0, 400), card(1, 10)), reading(true, card(0, 1783), card(1, 1393)), "card1", 1383, true, false},
		{"a measured 0 stays a figure", 0, reading(true, card(0, 400)), reading(true, card(0, 400)), "card0", 0, true, false},
		{"[N/A] used memory: unknown, not 0", 0, reading(true, card(0, -1)), reading(true, card(0, -1)), "card0", 0, false, false},
		{"a stale reading after the start: unknown", 0, reading(true, card(0, 400)), reading(false, card(0, 400)), "card0", 0, false, false},
		{"no reading before: unknown", 0, reading(false), reading(true, card(0, 1783)), "card0", 0, false, false},
		{"the card is not listed", 2, reading(true, card(0, 1)), reading(true, card(0, 2)), "", 0, false, false},
		{"MIG", 0, reading(true, nvsmi.GPU{Index: 0, Name: "A100", UsedMiB: 0, MIG: nvsmi.MIGEnabled}),
			reading(true, nvsmi.GPU{Index: 0, Name: "A100", UsedMiB: 1383, MIG: nvsmi.MIGEnabled}), "A100", 1383, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := measure(gpu, c.idx, c.before, c.after)
			v, known := w.VRAM()
			if w.GPUIndex != c.idx || w.GPU != c.wantName || v != c.wantVRAM || known != c.wantKnown || w.MIG != c.wantMIG {
				t.Fatalf("got %+v", w)
			}
			b, _ := json.Marshal(w)
			if !strings.Contains(string(b), `"gpu_index":`) || !strings.Contains(string(b), `"vram_mib":`) || !strings.Contains(string(b), `"vram_known":`) {
				t.Errorf("JSON %s drops a zero figure", b)
			}
		})
	}
}

// TestToFramingUnknown: an "[N/A]" figure is named unknown, not sent as a 0
// that means "none free".
func TestToFramingUnknown(t *testing.T) {
	fs := toFraming([]nvsmi.GPU{{Index: 0, Name: "vGPU", TotalMiB: 16384, UsedMiB: -1, FreeMiB: -1}, {Index: 1, Name: "b", TotalMiB: 8, UsedMiB: 0, FreeMiB: 8, MIG: nvsmi.MIGEnabled}})
	if len(fs) != 2 || !fs[0].Known(framing.GPUTotal) || fs[0].Known(framing.GPUFree) || fs[0].Known(framing.GPUUsed) ||
		!slices.Equal(fs[0].Unknown, []string{framing.GPUUsed, framing.GPUFree}) || !fs[1].Known(framing.GPUUsed) || !fs[1].MIG {
		t.Fatalf("%+v", fs)
	}
	if w := fs[0].MemWords(); !strings.Contains(w, "not known free of 16384 MiB") {
		t.Errorf("words %q", w)
	}
}

// TestOldAgentJSON: what an agent before this change wrote still reads:
// no vram_known (a figure it sent counts as known), no unknown list.
func TestOldAgentJSON(t *testing.T) {
	var w framing.Where
	json.Unmarshal([]byte(`{"device":"gpu","gpu":"RTX","vram_mib":1383}`), &w)
	if v, ok := w.VRAM(); !ok || v != 1383 || w.GPUIndex != 0 {
		t.Fatalf("%+v", w)
	}
	var g framing.GPU
	json.Unmarshal([]byte(`{"index":1,"name":"x","total_mib":8,"used_mib":1,"free_mib":7}`), &g)
	if !g.Known(framing.GPUFree) || g.FreeMiB != 7 {
		t.Fatalf("%+v", g)
	}
}

// TestEncoderEnvAlwaysPCIOrder: CUDA numbers cards as nvidia-smi does
// whether or not a card was chosen.
func TestEncoderEnvAlwaysPCIOrder(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	for _, c := range []struct {
		cfg     Config
		visible string
		idx     int
	}{{Config{}, "", 0}, {Config{CUDADevice: -1, CUDADeviceSet: true}, "", 0}, {Config{CUDADevice: 2, CUDADeviceSet: true}, "2", 2}} {
		env := c.cfg.encoderEnv()
		if !slices.Contains(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID") {
			t.Errorf("%+v: no PCI order in the encoder's environment", c.cfg)
		}
		vis := ""
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "CUDA_VISIBLE_DEVICES="); ok {
				vis = v
			}
		}
		if vis != c.visible || c.cfg.gpuIndex() != c.idx {
			t.Errorf("%+v: CUDA_VISIBLE_DEVICES %q (want %q), measured card %d (want %d)", c.cfg, vis, c.visible, c.cfg.gpuIndex(), c.idx)
		}
	}
}
