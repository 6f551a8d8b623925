package traymodel

import (
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

func TestUptimeMovesByTheMinute(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "under a minute"}, {59 * time.Second, "under a minute"}, {61 * time.Second, "1 min"}, {125 * time.Minute, "2 h 05 min"}} {
		if got := Uptime(tt.d); got != tt.want {
			t.Errorf("Uptime(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	// Every label of a ready menu stays the same within a minute of uptime.
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: t0, Model: "m"}}
	first := Build(Input{State: st, Reach: Connected, Now: t0.Add(2*time.Minute + time.Second)})
	for s := 2; s < 60; s += 7 {
		m := Build(Input{State: st, Reach: Connected, Now: t0.Add(2*time.Minute + time.Duration(s)*time.Second)})
		for id, it := range first.Items {
			if m.Items[id].Title != it.Title {
				t.Fatalf("label %v moved within a minute: %q -> %q", id, it.Title, m.Items[id].Title)
			}
		}
	}
}

func TestNextChange(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fast := 5 * time.Second
	state := func(phase string) *controlapi.State {
		return &controlapi.State{Server: controlapi.ServerState{Phase: phase, Since: t0}}
	}
	for _, tt := range []struct {
		name string
		in   Input
		now  time.Time
		want time.Duration
	}{
		{"no service", Input{}, t0, 0},
		{"stopped", Input{State: state(controlapi.PhaseStopped)}, t0, 0},
		{"starting", Input{State: state(controlapi.PhaseStarting)}, t0.Add(3 * time.Second), fast},
		{"pending", Input{State: state(controlapi.PhaseReady), Pending: &Pending{Action: "restart"}}, t0, fast},
		{"ready, 90 s up", Input{State: state(controlapi.PhaseReady)}, t0.Add(90 * time.Second), 30 * time.Second},
		{"ready, on the minute", Input{State: state(controlapi.PhaseReady)}, t0.Add(2 * time.Minute), time.Minute},
	} {
		if got := NextChange(tt.in, tt.now, fast); got != tt.want {
			t.Errorf("%s: NextChange = %v, want %v", tt.name, got, tt.want)
		}
	}
}
