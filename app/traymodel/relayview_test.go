package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

func TestRelayViewSaysWhereTheLastPictureWent(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var v RelayView
	if v.Line(now) != "" {
		t.Fatal("a line before any report")
	}
	pic := func(where string, ms int) events.Event {
		return at(events.New("", events.PictureEncodedDetails{Where: where, MS: int64(ms)}), now.Add(-time.Minute))
	}
	v.Fold([]events.Event{pic(events.WhereRemote, 2830)})
	if l := v.Line(now); !strings.Contains(l, "on the second PC, 2.8 s") {
		t.Fatalf("remote: %q", l)
	}
	v.Fold([]events.Event{
		events.New("", events.RemoteWakeDetails{MAC: "aa:bb:cc:dd:ee:ff"}),
		events.New("", events.RemoteWakeDetails{OK: new(false)}),
		{Kind: events.VisionFallback},
		pic(events.WhereFallbackCPU, 15270),
	})
	l := v.Line(now)
	for _, want := range []string{"on the CPU (fallback)", "15 s", "did not wake", "fallbacks: 1"} {
		if !strings.Contains(l, want) {
			t.Errorf("line %q lacks %q", l, want)
		}
	}
	v.Fold([]events.Event{events.New("", events.RemoteWakeDetails{OK: new(true), WokeMS: 4200}), pic(events.WhereLocalCPU, 900)})
	if l := v.Line(now); !strings.Contains(l, "woke in 4.2 s") || !strings.Contains(l, "on the CPU, 0.9 s") {
		t.Fatalf("%q", l)
	}
}

func TestFailoverNotifiesOnceAndBackAnswersIt(t *testing.T) {
	var r Rules
	now := time.Now()
	st := &controlapi.State{}
	fallback := events.Event{Kind: events.VisionFallback, Message: "second PC off"}
	n := r.Observe(st, st, []events.Event{fallback}, now)
	if len(n) != 1 || n[0].Topic != TopicFallback {
		t.Fatalf("first failover: %+v", n)
	}
	if n := r.Observe(st, st, []events.Event{fallback}, now.Add(time.Minute)); len(n) != 0 {
		t.Fatalf("a second failover within the window notified again: %+v", n)
	}
	if n := r.Observe(st, st, []events.Event{{Kind: events.RemoteReachable}}, now.Add(2*time.Minute)); len(n) != 1 || !n[0].Up {
		t.Fatalf("back: %+v", n)
	}
	if n := r.Observe(st, st, []events.Event{{Kind: events.RemoteReachable}}, now.Add(3*time.Minute)); len(n) != 0 {
		t.Fatalf("back without a failover notified: %+v", n)
	}
}

func TestFallbackSwitchInTheMenu(t *testing.T) {
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady}, Vision: controlapi.VisionState{Placement: "remote"}}
	m := Build(Input{Now: time.Now(), State: st, RemoteName: "pc", FallbackCPU: true})
	it := m.Items[ItemFallback]
	if it.Title != FallbackTitle || !it.Visible || !it.Enabled || !it.Checked || !ItemFallback.Checkable() {
		t.Fatalf("fallback item %+v", it)
	}
	if m := Build(Input{Now: time.Now(), State: st}); m.Items[ItemFallback].Visible {
		t.Fatal("the fallback switch shows without a second PC")
	}
	if m := Build(Input{Now: time.Now(), Reach: NotRunning, RemoteName: "pc"}); m.Items[ItemFallback].Enabled {
		t.Fatal("the fallback switch is enabled without the service")
	}
}

// The tray started after the pictures: the line comes from the service's
// state, which folded the relay's events.
func TestRelayViewSeededFromTheServiceState(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := &controlapi.State{Vision: controlapi.VisionState{LastWhere: events.WhereFallbackCPU, LastPictureMS: 15270,
		LastPicture: now.Add(-time.Minute), Fallbacks: 2, Wakes: 1, LastWake: "no_answer"}}
	var v RelayView
	v.Seed(st)
	l := v.Line(now)
	for _, want := range []string{"on the CPU (fallback)", "15 s", "did not wake", "fallbacks: 2"} {
		if !strings.Contains(l, want) {
			t.Errorf("line %q lacks %q", l, want)
		}
	}
	// Events seen since win over the snapshot.
	v.Fold([]events.Event{at(events.New("", events.PictureEncodedDetails{Where: events.WhereRemote, MS: 2830}), now)})
	v.Seed(&controlapi.State{Vision: controlapi.VisionState{LastWhere: events.WhereLocalCPU}})
	if l := v.Line(now); !strings.Contains(l, "on the second PC") {
		t.Fatalf("%q", l)
	}
}

// TestRelayLineSaysTheDeviceAndFailures: the line names the GPU the second
// PC's encoder really reads on (its start line, through vision.ready), says
// a failed picture with its reason until the next one is read, and a
// degraded encoder is one notice.
func TestRelayLineSaysTheDeviceAndFailures(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var v RelayView
	v.Fold([]events.Event{
		events.New("", events.EncoderReadyDetails{Where: events.WhereRemote, Device: "gpu", GPU: "NVIDIA GeForce RTX 3060 Laptop GPU"}),
		at(events.New("", events.PictureEncodedDetails{Where: events.WhereRemote, MS: 1600, OK: new(true)}), now),
	})
	if l := v.Line(now); !strings.Contains(l, "on the second PC (NVIDIA GeForce RTX 3060 Laptop GPU), 1.6 s") {
		t.Errorf("line %q", l)
	}
	v.Fold([]events.Event{at(events.New("second PC pc2 gave no result within 30s", events.PictureEncodedDetails{Where: events.WhereRemote, OK: new(false)}), now)})
	if l := v.Line(now); !strings.Contains(l, "failed: second PC pc2 gave no result") {
		t.Errorf("after a failure: %q", l)
	}
	v.Fold([]events.Event{at(events.New("", events.PictureEncodedDetails{Where: events.WhereRemote, MS: 1500, OK: new(true)}), now)})
	if l := v.Line(now); strings.Contains(l, "failed") {
		t.Errorf("a success did not clear the failure: %q", l)
	}
	n := RelayNotices([]events.Event{{Kind: events.EncoderDegraded, Message: "pictures are read on the second PC's CPU, not its GPU (no CUDA device)"}})
	if len(n) != 1 || n[0].Topic != TopicDegraded || !strings.Contains(n[0].Body, "not its GPU") {
		t.Errorf("notices %+v", n)
	}
}

// at is e at time t.
func at(e events.Event, t time.Time) events.Event {
	e.Time = t
	return e
}
