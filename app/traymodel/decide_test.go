package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

func TestDecideVision(t *testing.T) {
	tests := []struct {
		name             string
		st               *controlapi.State
		target, remote   string
		noop, confirm    bool
		setup            string
		questionMentions string
	}{
		{"same placement: nothing", ready(), "remote", "gpu-laptop", true, false, "", ""},
		{"ready server: ask, restart interrupts", ready(), "cpu", "gpu-laptop", false, true, "", "requests in progress are cut off"},
		{"ready with a recent picture: say so", with(func(s *controlapi.State) { s.Vision.LastPicture = t0.Add(-30 * time.Second) }),
			"cpu", "gpu-laptop", false, true, "", "A picture was read 30 s ago"},
		{"switch to the paired second PC names it", with(func(s *controlapi.State) { s.Vision.Placement = "gpu" }),
			"remote", "gpu-laptop", false, true, "", "Switching vision to the second PC (gpu-laptop)"},
		{"starting: ask, the start begins again", with(phase(controlapi.PhaseStarting, 0)), "off", "gpu-laptop", false, true, "", "interrupts the start"},
		{"failed server: nothing to interrupt", with(phase(controlapi.PhaseFailed, 0)), "cpu", "gpu-laptop", false, false, "", ""},
		{"stopped server: nothing to interrupt", with(phase(controlapi.PhaseStopped, 0)), "cpu", "gpu-laptop", false, false, "", ""},
		{"no second PC paired: open setup there", with(func(s *controlapi.State) { s.Vision.Placement = "gpu" }), "remote", "", false, false, "remote", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideVision(tt.st, tt.target, tt.remote, t0)
			if d.Noop != tt.noop || d.Confirm != tt.confirm || d.OpenSetupPage != tt.setup {
				t.Fatalf("got %+v", d)
			}
			if !strings.Contains(d.Question, tt.questionMentions) {
				t.Errorf("question %q does not mention %q", d.Question, tt.questionMentions)
			}
			if d.Confirm && (!strings.HasSuffix(d.Question, "Continue?") || d.Explain == "" || strings.Contains(d.Explain, "Continue?")) {
				t.Errorf("question/explain: %q / %q", d.Question, d.Explain)
			}
		})
	}
	if d := DecideRestart(ready(), t0); !d.Confirm || !strings.HasPrefix(d.Question, "Strata stops answering for 1-3 minutes") {
		t.Errorf("restarting a ready server must ask: %+v", d)
	}
	// This install's own last start, once one got ready, is the figure.
	measured := ready()
	measured.Server.LastStartS = 42.4
	if d := DecideRestart(measured, t0); !strings.HasPrefix(d.Question, "Strata stops answering for about 42 s (its last start took that long)") {
		t.Errorf("the last start's time is not what the dialog says: %q", d.Question)
	}
	if d := DecideRestart(with(phase(controlapi.PhaseFailed, 0)), t0); d.Confirm {
		t.Error("restarting a failed server must not ask")
	}
}

func TestPendingResolve(t *testing.T) {
	started := t0
	p := &Pending{Action: "vision", Placement: "cpu", Started: started}
	tests := []struct {
		name    string
		st      *controlapi.State
		now     time.Duration
		done    bool
		failure string
	}{
		{"old ready state from before the click", with(func(s *controlapi.State) { s.Vision.Placement = "remote" }), time.Second, false, ""},
		{"restarting", with(phase(controlapi.PhaseRestarting, time.Second)), 2 * time.Second, false, ""},
		{"ready with the new placement", with(func(s *controlapi.State) {
			phase(controlapi.PhaseReady, time.Minute)(s)
			s.Vision.Placement = "cpu"
		}), time.Minute, true, ""},
		{"ready but still the old placement", with(phase(controlapi.PhaseReady, time.Minute)), time.Minute, false, ""},
		{"failed after the click", with(func(s *controlapi.State) {
			phase(controlapi.PhaseFailed, time.Minute)(s)
			s.Server.LastError = "the vision encoder did not start"
		}), time.Minute, true, "the vision encoder did not start"},
		{"service away", nil, time.Minute, false, ""},
		{"gives up showing progress after a long time", nil, 20 * time.Minute, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, failure := p.Resolve(tt.st, started.Add(tt.now))
			if done != tt.done || failure != tt.failure {
				t.Errorf("Resolve = %v, %q; want %v, %q", done, failure, tt.done, tt.failure)
			}
		})
	}
	if done, _ := (&Pending{Action: "restart", Started: started}).Resolve(with(phase(controlapi.PhaseReady, time.Minute)), started.Add(time.Minute)); !done {
		t.Error("a restart is done when the server is ready again")
	}
	if done, _ := (&Pending{Action: "restart", Started: started}).Resolve(ready(), started.Add(20*time.Minute)); !done {
		t.Error("progress must not show forever")
	}
	if done, _ := (&Pending{Action: "vision", Placement: "cpu", Started: started, Err: "refused"}).Resolve(ready(), started.Add(time.Minute)); !done {
		t.Error("a failure line must go away after a while")
	}
}

// The Free-the-GPU item is there only while the model is loaded by the
// service's own server; its pending line waits for the state's unload
// time, not for a phase (the server stays ready).
func TestUnloadItemAndItsProgress(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ready := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: now.Add(-time.Hour), LastStartS: 42}}
	in := Input{State: ready, Reach: Connected, Now: now}
	if it := Build(in).Items[ItemUnload]; !it.Visible || !it.Enabled {
		t.Fatalf("ready and loaded: %+v", it)
	}
	d := DecideUnload(ready, now)
	if !d.Confirm || !strings.Contains(d.Question, "for about 42 s") || !strings.Contains(d.Question, "gives the GPU's memory back") {
		t.Errorf("question %q", d.Question)
	}
	for name, st := range map[string]*controlapi.State{
		"unloaded": {Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Unloaded: now.Add(-time.Minute)}},
		"stopped":  {Server: controlapi.ServerState{Phase: controlapi.PhaseStopped}},
		"starting": {Server: controlapi.ServerState{Phase: controlapi.PhaseStarting}},
		"foreign":  {Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Foreign: &controlapi.ForeignServer{Port: 8080}}},
	} {
		if Build(Input{State: st, Reach: Connected, Now: now}).Items[ItemUnload].Visible {
			t.Errorf("%s: the item shows", name)
		}
		if !DecideUnload(st, now).Noop {
			t.Errorf("%s: not a no-op", name)
		}
	}
	p := &Pending{Action: "unload", Started: now}
	in.Pending = p
	if got := Build(in).Items[ItemProgress].Title; got != "Giving the GPU's memory back..." {
		t.Errorf("progress %q", got)
	}
	if it := Build(in).Items[ItemUnload]; it.Enabled {
		t.Error("the item is enabled while its own unload runs")
	}
	if done, _ := p.Resolve(ready, now.Add(time.Second)); done {
		t.Error("done before the model went")
	}
	gone := *ready
	gone.Server.Unloaded = now.Add(time.Second)
	if done, fail := p.Resolve(&gone, now.Add(2*time.Second)); !done || fail != "" {
		t.Errorf("after the unload: done %v, %q", done, fail)
	}
}
