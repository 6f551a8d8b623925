package traymodel

import (
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/lendshown"
)

// Whatever the service sends (a newer service may have phases this tray
// does not know), the menu is whole: an icon, a short tooltip, the fixed
// actions, and at most one vision choice ticked.
func FuzzBuild(f *testing.F) {
	f.Add("ready", "remote", "ready", "gpu-laptop", true, "", 3, int64(60))
	f.Add("failed", "gpu", "failed", "", false, "port in use", 0, int64(-5))
	f.Add("warming", "tpu", "dozing", "x", false, "\x00\xff", 99, int64(1<<40))
	f.Fuzz(func(t *testing.T, phase, placement, encoder, host string, reachable bool, detail string, restarts int, ageS int64) {
		st := &controlapi.State{
			Server: controlapi.ServerState{Phase: phase, Detail: detail, LastError: detail, Restarts: restarts, Since: t0.Add(-time.Duration(ageS) * time.Second), Model: host},
			Vision: controlapi.VisionState{Placement: placement, Encoder: encoder, Error: detail, LastPicture: t0.Add(time.Duration(ageS) * time.Second)},
		}
		if host != "" {
			st.Remote = &controlapi.RemoteInfo{Host: host, Reachable: reachable, Reason: detail}
		}
		m := Build(Input{Now: t0, State: st, RemoteName: host})
		if m.Icon == "" || len([]rune(m.Tooltip)) > 127 {
			t.Fatalf("icon %q tooltip %q", m.Icon, m.Tooltip)
		}
		ticked := 0
		for _, id := range []ItemID{ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff} {
			if m.Items[id].Checked {
				ticked++
			}
		}
		if ticked > 1 {
			t.Fatalf("%d choices ticked", ticked)
		}
		for _, id := range []ItemID{ItemViewLogs, ItemSetup, ItemAutostart, ItemQuit} {
			if !m.Items[id].Visible || !m.Items[id].Enabled || m.Items[id].Title == "" {
				t.Fatalf("%d missing", id)
			}
		}
		var r Rules
		r.Observe(st, st, nil, t0)
		r.Observe(&controlapi.State{}, st, nil, t0)

		// The same PC lending its GPU, with the service and without one:
		// the lending rows and the tray's own rows are there, the tooltip short.
		l := &lendshown.Shown{Name: host, Code: detail, Expires: t0.Add(time.Duration(ageS) * time.Second), Paired: []string{host, detail}}
		for _, in := range []Input{{Now: t0, State: st, RemoteName: host, Lending: l}, {Now: t0, Reach: NotRunning, Lending: l}} {
			m := Build(in)
			if m.Icon == "" || len([]rune(m.Tooltip)) > 127 {
				t.Fatalf("lending: icon %q tooltip %q", m.Icon, m.Tooltip)
			}
			for _, id := range []ItemID{ItemLendCode, ItemLendPaired, ItemLendStop, ItemViewLogs, ItemQuit} {
				if !m.Items[id].Visible || m.Items[id].Title == "" {
					t.Fatalf("lending: row %d missing", id)
				}
			}
		}
	})
}
