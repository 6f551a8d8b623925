package trayctl

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

func (v *recView) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

// An idle menu (nothing on it moves with time) is not redrawn; a starting
// server's "for N s" is, at the fast cadence.
func TestRedrawOnlyWhenSomethingMoves(t *testing.T) {
	view := newRecView()
	ctl := New()
	ctl.View = view
	ctl.Refresh = 10 * time.Millisecond
	ctl.LocalEvery = time.Hour
	ctl.LoadSettings = func() (*settings.Settings, error) { return &settings.Settings{}, nil }
	ctl.Logf = t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	stopped := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseStopped, Since: time.Now()}}
	ctl.Update(watch.Update{State: &stopped})
	// A round trip through the controller's queue: the update has been shown.
	done := make(chan struct{})
	ctl.post(func() { close(done) })
	<-done
	before := view.count()
	// 30 fast periods: a controller that redrew on a timer would show ~30 menus.
	time.Sleep(300 * time.Millisecond)
	if n := view.count() - before; n > 1 {
		t.Fatalf("an idle menu was shown %d more times in 30 refresh periods; want none", n)
	}

	starting := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseStarting, Since: time.Now()}}
	ctl.Update(watch.Update{State: &starting})
	base := view.count()
	deadline := time.After(30 * time.Second)
	for view.count() < base+3 {
		select {
		case <-deadline:
			t.Fatal("a starting server's menu was not redrawn at the fast cadence")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
