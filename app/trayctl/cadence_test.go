package trayctl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
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

// A change to the settings file reaches the menu by change notification,
// with the timed re-read an hour away; also when the settings folder does
// not exist yet when the tray starts (setup has not run).
func TestSettingsFollowedByNotification(t *testing.T) {
	for _, tt := range []struct {
		name   string
		exists bool
	}{{"folder there", true}, {"folder made later", false}} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if !tt.exists {
				home = filepath.Join(home, "companion")
			}
			settingsFollowed(t, home)
		})
	}
}

func settingsFollowed(t *testing.T, home string) {
	t.Setenv(locations.EnvHome, home)
	view := newRecView()
	ctl := New()
	ctl.View = view
	ctl.LocalEvery = time.Hour
	ctl.Logf = t.Logf
	running(t, ctl)

	ready := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: time.Now()}}
	ctl.Update(watch.Update{State: &ready})
	remote := func(m traymodel.Menu) bool {
		return strings.Contains(m.Items[traymodel.ItemVisionRemote].Title, "pc-a")
	}
	if remote(view.waitFor(t, "the ready state", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemServer].Title != "" })) {
		t.Fatal("the menu names a second PC before one was paired")
	}
	// The watcher may start a moment after Run: write until the menu follows.
	done := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			s := &settings.Settings{Remote: &settings.Remote{Host: "pc-a", Port: 22 + i%2}}
			if err := s.Save(filepath.Join(home, "settings.json")); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer close(done)
	view.waitFor(t, "the second PC from the new settings", remote)
}

// running runs ctl until the test ends.
func running(t *testing.T, ctl *Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
