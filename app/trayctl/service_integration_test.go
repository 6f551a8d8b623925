//go:build !windows

package trayctl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/testenv"
)

// The tray's controller and watcher against the real strata-service (built
// from ./service, run as its own process) supervising the Strata stand-in:
// the contract of internal/controlapi as the service really serves it. The
// tray starts first, sees the service appear, follows a start and a restart
// it asked for, opens the log file the service names, and survives the
// service stopping and starting again.
func TestAgainstTheRealService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata-service and the Strata stand-in")
	}
	dir := t.TempDir()
	svc := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{Step: "100ms"})
	home := filepath.Join(dir, "home")
	t.Setenv(locations.EnvHome, home)

	var out testenv.Buffer
	var mu sync.Mutex
	var cmd *exec.Cmd
	startService := func() {
		mu.Lock()
		defer mu.Unlock()
		cmd = exec.Command(svc, "run", "--foreground", "--strata-root", root.Dir, "--config", root.Config, "--restart-delay", "50ms", "--stop-timeout", "5s")
		cmd.Env = append(os.Environ(), locations.EnvHome+"="+home)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting strata-service: %v", err)
		}
	}
	stopService := func() {
		mu.Lock()
		defer mu.Unlock()
		if cmd == nil {
			return
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("strata-service did not stop on SIGTERM")
		}
		cmd = nil
	}
	t.Cleanup(func() {
		stopService()
		if t.Failed() {
			t.Logf("strata-service's output:\n%s", out.String())
		}
	})

	view, notes, desk := newRecView(), &countNotifier{}, &fakeDesktop{answer: true}
	ctl := New()
	ctl.View, ctl.Notifier, ctl.Desktop, ctl.Logf = view, notes, desk, t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	w := &watch.Watcher{Wait: 5 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logf: t.Logf}
	go func() { defer wg.Done(); w.Run(ctx, ctl.Update) }()
	defer func() { cancel(); wg.Wait() }()

	view.waitFor(t, "no service yet", func(m traymodel.Menu) bool {
		return m.Icon == assets.TrayOffline && item(m, traymodel.ItemServer) == "Strata Companion service not installed or not running"
	})

	startService()
	view.waitFor(t, "the server starting", func(m traymodel.Menu) bool {
		return m.Icon == assets.TrayBusy && strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: starting")
	})
	m := view.waitFor(t, "the server ready", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: ready")
	})
	if !m.Items[traymodel.ItemOpenBrowser].Enabled || !m.Items[traymodel.ItemRestart].Enabled {
		t.Errorf("ready menu:\n%s", dump(m))
	}
	if got := notes.titles(); len(got) != 1 || got[0] != "Strata is ready" {
		t.Errorf("notices after the first start: %q", got)
	}

	// Restart Strata, confirmed: progress, then ready again.
	ctl.Click(traymodel.ItemRestart)
	view.waitFor(t, "the restart in progress", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemProgress), "Restarting Strata")
	})
	view.waitFor(t, "ready after the restart", func(m traymodel.Menu) bool {
		return !m.Items[traymodel.ItemProgress].Visible && strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: ready")
	})

	if got := notes.titles(); len(got) != 2 || got[1] != "Strata is ready" {
		t.Errorf("notices after the restart the user asked for: %q", got)
	}

	// View logs opens the file the service captures the server's output in.
	ctl.Click(traymodel.ItemViewLogs)
	deadline := time.Now().Add(30 * time.Second)
	for {
		desk.mu.Lock()
		opened := append([]string(nil), desk.opened...)
		desk.mu.Unlock()
		if len(opened) > 0 {
			if _, err := os.Stat(opened[0]); err != nil || !strings.HasPrefix(opened[0], home) {
				t.Errorf("View logs opened %q (%v)", opened[0], err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("View logs opened nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The service stops (an update, a crash): the tray says so, then picks
	// the new instance up (new address, new token, numbers from 1).
	stopService()
	view.waitFor(t, "the service gone", func(m traymodel.Menu) bool { return m.Icon == assets.TrayOffline })
	startService()
	view.waitFor(t, "ready under the new service", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: ready")
	})
}
