package traymodel

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// step is one state the tray sees, with the events that led to it and when.
type step struct {
	at  time.Duration // after t0
	st  *controlapi.State
	evs []events.Kind
}

func remoteReach(ok bool) func(*controlapi.State) {
	return func(s *controlapi.State) {
		s.Remote.Reachable = ok
		if !ok {
			s.Remote.Reason = "no route to host"
		}
	}
}

func phase(p string, since time.Duration) func(*controlapi.State) {
	return func(s *controlapi.State) { s.Server.Phase, s.Server.Since = p, t0.Add(since) }
}

func run(r *Rules, steps []step) []string {
	var got []string
	var prev *controlapi.State
	for _, s := range steps {
		var evs []events.Event
		for _, k := range s.evs {
			evs = append(evs, events.Event{Kind: k})
		}
		for _, n := range r.Observe(prev, s.st, evs, t0.Add(s.at)) {
			got = append(got, n.Title)
		}
		prev = s.st
	}
	return got
}

func TestRules(t *testing.T) {
	up, down := with(remoteReach(true)), with(remoteReach(false))
	var flapping []step
	for i := 0; i < 50; i++ {
		flapping = append(flapping, step{at: time.Duration(2*i) * time.Second, st: down}, step{at: time.Duration(2*i+1) * time.Second, st: up})
	}
	flapping = append([]step{{st: up}}, flapping...)

	tests := []struct {
		name  string
		rules Rules
		steps []step
		want  []string
	}{
		{"first sight raises nothing, even a failure", Rules{}, []step{
			{st: with(phase(controlapi.PhaseFailed, 0))},
		}, nil},
		{"ready -> second PC down -> back: two notices", Rules{}, []step{
			{st: up}, {at: time.Minute, st: down}, {at: 2 * time.Minute, st: up},
		}, []string{"Pictures unavailable: second PC not reachable", "Second PC is back"}},
		{"a flapping link: one down, one back, not fifty", Rules{}, flapping,
			[]string{"Pictures unavailable: second PC not reachable", "Second PC is back"}},
		{"down again after the window: told again", Rules{Window: 10 * time.Minute}, []step{
			{st: up}, {at: time.Minute, st: down}, {at: 2 * time.Minute, st: up}, {at: 20 * time.Minute, st: down},
		}, []string{"Pictures unavailable: second PC not reachable", "Second PC is back", "Pictures unavailable: second PC not reachable"}},
		{"the encoder failing with the second PC down is one notice", Rules{}, []step{
			{st: up}, {at: time.Minute, st: with(func(s *controlapi.State) {
				remoteReach(false)(s)
				s.Vision.Encoder = controlapi.EncoderFailed
			})},
		}, []string{"Pictures unavailable: second PC not reachable"}},
		{"server ready after a start", Rules{}, []step{
			{st: with(phase(controlapi.PhaseStarting, 0))},
			{at: time.Second, st: with(phase(controlapi.PhaseStarting, 0))},
			{at: time.Minute, st: with(phase(controlapi.PhaseReady, time.Minute))},
		}, []string{"Strata is ready"}},
		{"a restart that ended between two looks still counts", Rules{}, []step{
			{st: with(phase(controlapi.PhaseReady, 0))},
			{at: time.Hour, st: with(phase(controlapi.PhaseReady, time.Hour))},
		}, []string{"Strata is ready"}},
		{"failed, then ready again", Rules{}, []step{
			{st: up},
			{at: time.Minute, st: with(func(s *controlapi.State) {
				phase(controlapi.PhaseFailed, time.Minute)(s)
				s.Server.LastError = "the engine exited with code 3"
			})},
			{at: 2 * time.Minute, st: with(phase(controlapi.PhaseStarting, 2*time.Minute))},
			{at: 3 * time.Minute, st: with(phase(controlapi.PhaseReady, 3*time.Minute))},
		}, []string{"Strata stopped working", "Strata is ready"}},
		{"crash restarts piling up: once", Rules{}, []step{
			{st: up},
			{at: 1 * time.Minute, st: with(func(s *controlapi.State) { s.Server.Phase, s.Server.Restarts = controlapi.PhaseRestarting, 1 })},
			{at: 2 * time.Minute, st: with(func(s *controlapi.State) { s.Server.Phase, s.Server.Restarts = controlapi.PhaseRestarting, 2 })},
			{at: 3 * time.Minute, st: with(func(s *controlapi.State) { s.Server.Phase, s.Server.Restarts = controlapi.PhaseRestarting, 3 })},
			{at: 4 * time.Minute, st: with(func(s *controlapi.State) { s.Server.Phase, s.Server.Restarts = controlapi.PhaseRestarting, 4 })},
		}, []string{"Strata keeps restarting"}},
		{"encoder failed and back", Rules{}, []step{
			{st: with(func(s *controlapi.State) {
				s.Vision = controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady}
			})},
			{at: time.Minute, st: with(func(s *controlapi.State) {
				s.Vision = controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderFailed, Error: "out of memory"}
			})},
			{at: 2 * time.Minute, st: with(func(s *controlapi.State) {
				s.Vision = controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady}
			})},
		}, []string{"The vision encoder failed", "Pictures work again"}},
		{"a slow elastic wake, also when it took as long as the last", Rules{Window: time.Minute}, []step{
			{st: with(func(s *controlapi.State) { s.Vision.LastWakeMS = 25000 })},
			{at: time.Minute, st: with(func(s *controlapi.State) { s.Vision.LastWakeMS = 3000 }), evs: []events.Kind{events.EncoderWoke}},
			{at: 2 * time.Minute, st: with(func(s *controlapi.State) { s.Vision.LastWakeMS = 31000 }), evs: []events.Kind{events.EncoderWoke}},
			{at: 4 * time.Minute, st: with(func(s *controlapi.State) { s.Vision.LastWakeMS = 31000 }), evs: []events.Kind{events.EncoderWoke}},
			{at: 6 * time.Minute, st: with(func(s *controlapi.State) { s.Vision.LastWakeMS = 31000 })},
		}, []string{"Reading a picture waited for the encoder", "Reading a picture waited for the encoder"}},
		{"turned off: silent", Rules{Off: true}, []step{
			{st: up}, {at: time.Minute, st: down}, {at: 2 * time.Minute, st: up},
		}, nil},
		{"the service away and back is not a second-PC change", Rules{}, []step{
			{st: down}, {at: time.Minute, st: nil}, {at: 2 * time.Minute, st: down},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rules
			got := run(&r, tt.steps)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("notices:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// Turning notifications on later does not replay what happened while off.
func TestRulesOffThenOn(t *testing.T) {
	r := Rules{Off: true}
	up, down := with(remoteReach(true)), with(remoteReach(false))
	r.Observe(up, down, nil, t0)
	r.Off = false
	if got := r.Observe(down, down, nil, t0.Add(time.Minute)); len(got) != 0 {
		t.Errorf("replayed %v", got)
	}
}

func TestNoticeTexts(t *testing.T) {
	ns := Transitions(with(remoteReach(true)), with(remoteReach(false)), nil)
	if len(ns) != 1 || !strings.Contains(ns[0].Body, "gpu-laptop") || !strings.Contains(ns[0].Body, "no route to host") ||
		!strings.Contains(ns[0].Body, "Text keeps working") {
		t.Errorf("the down notice must name the PC, the reason and what still works: %+v", ns)
	}
	f := with(func(s *controlapi.State) {
		s.Server.Phase, s.Server.LastError = controlapi.PhaseFailed, "port 8080 is in use"
	})
	ns = Transitions(ready(), f, nil)
	if len(ns) != 1 || !ns[0].Urgent || !strings.Contains(ns[0].Body, "port 8080 is in use") || !strings.Contains(ns[0].Body, "View logs") {
		t.Errorf("the failure notice must be urgent, say why and what to do: %+v", ns)
	}
}
