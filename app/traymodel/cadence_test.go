package traymodel

import (
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

// A ready menu says since when the server is up, as a time of day: no label
// moves while the day lasts, so an idle tray has nothing to redraw.
func TestReadyMenuStandsStill(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 14, 30, 0, time.UTC)
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: t0, Model: "m"},
		Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady, LastPicture: t0.Add(time.Minute)}}
	first := Build(Input{State: st, Reach: Connected, Now: t0.Add(2 * time.Minute)})
	if got, want := first.Items[ItemServer].Title, "Strata: ready · m · since 09:14"; got != want {
		t.Errorf("server line = %q, want %q", got, want)
	}
	for d := 3 * time.Minute; d < 14*time.Hour; d += 37 * time.Minute {
		m := Build(Input{State: st, Reach: Connected, Now: t0.Add(d)})
		for id, it := range first.Items {
			if m.Items[id].Title != it.Title {
				t.Fatalf("label %v moved %v later: %q -> %q", id, d, it.Title, m.Items[id].Title)
			}
		}
	}
	// The next day the time gains its date.
	next := Build(Input{State: st, Reach: Connected, Now: t0.Add(15 * time.Hour)})
	if got, want := next.Items[ItemServer].Title, "Strata: ready · m · since Dec 1 09:14"; got != want {
		t.Errorf("server line the next day = %q, want %q", got, want)
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
		{"stopped: at midnight", Input{State: state(controlapi.PhaseStopped)}, t0, 14 * time.Hour},
		{"starting", Input{State: state(controlapi.PhaseStarting)}, t0.Add(3 * time.Second), fast},
		{"restarting", Input{State: state(controlapi.PhaseRestarting)}, t0.Add(3 * time.Second), fast},
		{"pending", Input{State: state(controlapi.PhaseReady), Pending: &Pending{Action: "restart"}}, t0, fast},
		{"ready: at midnight", Input{State: state(controlapi.PhaseReady)}, t0.Add(90 * time.Second), 14*time.Hour - 90*time.Second},
		{"ready, one second to midnight", Input{State: state(controlapi.PhaseReady)}, t0.Add(14*time.Hour - time.Second), time.Second},
		{"ready, at midnight", Input{State: state(controlapi.PhaseReady)}, t0.Add(14 * time.Hour), 24 * time.Hour},
	} {
		if got := NextChange(tt.in, tt.now, fast); got != tt.want {
			t.Errorf("%s: NextChange = %v, want %v", tt.name, got, tt.want)
		}
	}
}
