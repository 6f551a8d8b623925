package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/controlapi"
)

// TestEncoderStateRows: one row per encoder state (controlapi.EncoderStates):
// the vision line and the tooltip say it in the table's words, with the
// times that matter (an idle stop's, a wake's, an unload's), and no state
// reads "unknown" but unknown itself.
func TestEncoderStateRows(t *testing.T) {
	rows := []struct {
		name    string
		vis     controlapi.VisionState
		srv     func(*controlapi.ServerState)
		line    string // the vision line, exactly
		tooltip string // in the tooltip
		icon    string
	}{
		{"ready", controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady}, nil,
			"Vision: this GPU · encoder ready", "encoder ready", assets.TrayReady},
		{"starting", controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderStarting}, nil,
			"Vision: this GPU · encoder starting", "encoder starting", assets.TrayReady},
		{"waking", controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderWaking}, nil,
			"Vision: second PC · encoder waking (starting for a picture)", "encoder waking", assets.TrayReady},
		{"degraded", controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderDegraded, Degraded: "no NVIDIA driver"}, nil,
			"Vision: second PC · encoder degraded (it reads on a CPU where a GPU was expected: no NVIDIA driver)", "encoder degraded", assets.TrayDegraded},
		{"idle-stopped", controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderIdle, IdleStopped: t0.Add(-10 * time.Minute), VRAMMiB: 1383}, nil,
			"Vision: second PC · encoder idle-stopped at 13:50 (VRAM given back; the next picture wakes it)", "encoder idle-stopped", assets.TrayReady},
		{"woke", controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady, WokeAt: t0.Add(-2 * time.Minute), LastWakeMS: 2400}, nil,
			"Vision: second PC · encoder ready (woke in 2.4 s at 13:58)", "encoder ready", assets.TrayReady},
		{"unloaded", controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderUnloaded},
			func(s *controlapi.ServerState) { s.Unloaded = t0.Add(-5 * time.Minute) },
			"Vision: CPU · encoder unloaded with the model at 13:55 (VRAM given back; the next request loads both again)", "encoder unloaded with the model", assets.TrayReady},
		{"failed", controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderFailed, Error: "out of VRAM"}, nil,
			"Vision: this GPU · encoder failed (out of VRAM)", "encoder failed: text only", assets.TrayDegraded},
		{"off", controlapi.VisionState{Placement: "off", Encoder: controlapi.EncoderOff}, nil,
			"Vision: off (text only)", "vision off", assets.TrayReady},
		{"unknown", controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderUnknown}, nil,
			"Vision: this GPU · encoder state unknown", "encoder state unknown", assets.TrayReady},
	}
	covered := map[string]bool{}
	for _, r := range rows {
		st := with(func(s *controlapi.State) {
			s.Vision = r.vis
			if r.srv != nil {
				r.srv(&s.Server)
			}
		})
		covered[r.vis.Encoder] = true
		m := Build(Input{Now: t0, State: st, RemoteName: "gpu-laptop"})
		if got := m.Items[ItemVision].Title; got != r.line {
			t.Errorf("%s: vision line\n got %q\nwant %q", r.name, got, r.line)
		}
		if !strings.Contains(m.Tooltip, r.tooltip) {
			t.Errorf("%s: tooltip %q lacks %q", r.name, m.Tooltip, r.tooltip)
		}
		if m.Icon != r.icon {
			t.Errorf("%s: icon %q, want %q", r.name, m.Icon, r.icon)
		}
		if r.vis.Encoder != controlapi.EncoderUnknown && strings.Contains(m.Items[ItemVision].Title+m.Tooltip, "unknown") {
			t.Errorf("%s: reads unknown: %q / %q", r.name, m.Items[ItemVision].Title, m.Tooltip)
		}
		if strings.Contains(m.Items[ItemVision].Title, "MiB") {
			t.Errorf("%s: the vision line names VRAM: %q", r.name, m.Items[ItemVision].Title)
		}
	}
	for _, s := range controlapi.EncoderStates {
		if !covered[s.ID] {
			t.Errorf("encoder state %q has no row here", s.ID)
		}
	}
}

// TestNoLastPictureLineWithVisionOff: after vision off the last picture's
// place is not shown as if pictures were still read there.
func TestNoLastPictureLineWithVisionOff(t *testing.T) {
	in := Input{Now: t0, State: with(func(s *controlapi.State) {
		s.Vision = controlapi.VisionState{Placement: "off", Encoder: controlapi.EncoderOff}
	}), Relay: RelayView{LastWhere: "local_cpu", LastMS: 600, LastAt: t0.Add(-time.Minute), Device: "its CPU"}}
	if got := Build(in).Items[ItemLastPicture]; got.Visible || got.Title != "" {
		t.Errorf("with vision off the last picture line shows %q", got.Title)
	}
	in.State.Vision = controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady}
	if got := Build(in).Items[ItemLastPicture].Title; !strings.Contains(got, "on the CPU") {
		t.Errorf("with vision on the CPU the last picture line is %q", got)
	}
}
