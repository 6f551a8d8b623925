package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/service/controltest"
)

func state() controlapi.State {
	return controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Model: "m"},
		Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady}}
}

// follow runs a watcher and hands its updates over a channel.
func follow(t *testing.T, connect func() (*controlapi.Client, error)) (<-chan Update, func()) {
	t.Helper()
	ch := make(chan Update)
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{Connect: connect, Wait: 5 * time.Second, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Logf: t.Logf}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.Run(ctx, func(u Update) {
			select {
			case ch <- u:
			case <-ctx.Done():
			}
		})
	}()
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return ch, stop
}

func next(t *testing.T, ch <-chan Update) Update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("no update")
	}
	return Update{}
}

// Events dropped while the tray was busy: the watcher re-reads the state and
// resumes after it, missing nothing that comes later.
func TestGapRereadsState(t *testing.T) {
	api := controltest.NewServiceCap(t, state(), 5)
	ch, _ := follow(t, func() (*controlapi.Client, error) { return api.Client(), nil })
	if u := next(t, ch); u.State == nil || u.State.Seq != 0 {
		t.Fatalf("first update %+v", u)
	}
	// One event; the watcher hands it over only when read, so it cannot
	// poll while the next 20 overflow the 5 events the bus keeps: its next
	// poll is answered with a gap, whatever the timing.
	api.Change(nil, events.Event{Kind: events.ServerProgress})
	for i := 0; i < 20; i++ {
		api.Change(func(s *controlapi.State) { s.Server.Detail = "step" }, events.Event{Kind: events.ServerProgress})
	}
	u := next(t, ch) // the first event (or, if it was fetched late, already a gap)
	sawGap := u.State != nil && u.State.Seq == 21 && len(u.Events) == 0
	for !sawGap {
		u = next(t, ch)
		if u.State != nil && u.State.Seq == 21 && len(u.Events) == 0 {
			sawGap = true
		} else if u.State == nil {
			t.Fatalf("lost the service: %v", u.Err)
		}
	}
	api.Change(func(s *controlapi.State) { s.Server.Phase = controlapi.PhaseRestarting }, events.Event{Kind: events.ServerRestarting})
	u = next(t, ch)
	if len(u.Events) != 1 || u.Events[0].Seq != 22 || u.State.Server.Phase != controlapi.PhaseRestarting {
		t.Fatalf("after the gap: %+v", u)
	}
}

// A refused token is reported once (not at every retry), and recognised.
func TestUnauthorizedOnce(t *testing.T) {
	api := controltest.NewService(t, state())
	var mu sync.Mutex
	tries := 0
	ch, stop := follow(t, func() (*controlapi.Client, error) {
		mu.Lock()
		tries++
		mu.Unlock()
		c := api.Client()
		c.Token = "wrong"
		return c, nil
	})
	u := next(t, ch)
	if u.State != nil || !IsUnauthorized(u.Err) {
		t.Fatalf("update %+v", u)
	}
	for {
		mu.Lock()
		n := tries
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case u := <-ch:
		t.Fatalf("the same error was reported again: %+v", u)
	default:
	}
	stop()
}

// No address file at all: controlapi's ErrNotRunning comes through as is.
func TestNotInstalled(t *testing.T) {
	t.Setenv("STRATA_COMPANION_HOME", t.TempDir())
	ch, _ := follow(t, nil)
	u := next(t, ch)
	if u.State != nil || !errors.Is(u.Err, controlapi.ErrNotRunning) {
		t.Fatalf("update %+v", u)
	}
}

// The default Connect finds the service through the files it writes.
func TestConnectThroughTheServiceFiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STRATA_COMPANION_HOME", home)
	api := controltest.NewService(t, state())
	api.WriteHome(t, home)
	ch, _ := follow(t, nil)
	if u := next(t, ch); u.State == nil || u.State.Server.Model != "m" {
		t.Fatalf("update %+v", u)
	}
}
