package trayctl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/service/controltest"
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
	ctl.Logf = t.Logf
	running(t, ctl)

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

// A change to the settings reaches the menu with the state the service
// sends after its settings.changed event (the tray never reads the file),
// with the timed re-read an hour away.
func TestSettingsFollowedByNotification(t *testing.T) {
	view := newRecView()
	ready := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: time.Now()}}
	api := controltest.NewService(t, ready)
	ctl := New()
	ctl.View = view
	ctl.LocalEvery = time.Hour
	ctl.Logf = t.Logf
	running(t, ctl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := &watch.Watcher{Connect: func() (*controlapi.Client, error) { return api.Client(), nil }, Wait: 5 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	go func() { defer close(done); w.Run(ctx, ctl.Update) }()
	t.Cleanup(func() { cancel(); <-done })

	remote := func(m traymodel.Menu) bool {
		return strings.Contains(m.Items[traymodel.ItemVisionRemote].Title, "pc-a")
	}
	if remote(view.waitFor(t, "the ready state", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemServer].Title != "" })) {
		t.Fatal("the menu names a second PC before one was paired")
	}
	api.Change(func(st *controlapi.State) {
		st.Settings = controlapi.ViewOf(&settings.Settings{Remote: &settings.Remote{Host: "pc-a", Port: 2222}})
	}, events.New("", events.SettingsChangedDetails{}))
	view.waitFor(t, "the second PC from the new settings", remote)
}

// running runs ctl until the test ends.
func running(t *testing.T, ctl *Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
