package trayctl

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/service/daemon"
)

// The tray against the real service (service/daemon, in process, no Strata
// install needed for relay reports): what the relay reports through POST
// /v1/relay shows in the tray's last-picture line, both for a tray that is
// running (events) and for one started afterwards (from /v1/state).
func TestRelayLineFromTheRealService(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	paired := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "gpu-laptop", User: "me"}}
	if err := paired.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{StrataRoot: t.TempDir(), ControlAddr: "127.0.0.1:0", Logf: t.Logf})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the service did not stop")
		}
	})
	var relayClient *controlapi.Client
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := controlapi.NewClient()
		if err == nil {
			relayClient = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service's control API did not come up: %v", err)
		}
	}
	report := func(evs ...events.Event) {
		t.Helper()
		if err := relayClient.ReportRelay(context.Background(), controlapi.RelayReport{Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	tray := func() *recView {
		view := newRecView()
		ctl := New()
		ctl.View, ctl.Notifier, ctl.Desktop, ctl.Autostart = view, &countNotifier{}, &fakeDesktop{answer: true}, &fakeAutostart{}
		ctl.Connect = func() (controlapi.Owner, error) { return controlapi.NewClient() }
		ctl.Logf = t.Logf
		tctx, tcancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); ctl.Run(tctx) }()
		w := &watch.Watcher{Connect: controlapi.NewClient, Wait: 5 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Logf: t.Logf}
		go func() { defer wg.Done(); w.Run(tctx, ctl.Update) }()
		t.Cleanup(func() { tcancel(); wg.Wait() })
		return view
	}
	line := func(m traymodel.Menu) string { return item(m, traymodel.ItemLastPicture) }

	running := tray()
	running.waitFor(t, "connected", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemFallback].Visible })
	report(events.New("", events.PictureEncodedDetails{Where: events.WhereRemote, MS: 2830}))
	running.waitFor(t, "the running tray's last-picture line", func(m traymodel.Menu) bool {
		return strings.Contains(line(m), "on the second PC, 2.8 s")
	})
	report(events.Event{Kind: events.VisionFallback, Message: "the second PC is off"},
		events.New("", events.PictureEncodedDetails{Where: events.WhereFallbackCPU, MS: 15270}))
	running.waitFor(t, "the running tray's fallback line", func(m traymodel.Menu) bool {
		return strings.Contains(line(m), "on the CPU (fallback), 15 s") && strings.Contains(line(m), "fallbacks: 1")
	})

	// A tray started after those pictures reads them from /v1/state.
	later := tray()
	later.waitFor(t, "a later tray's last-picture line", func(m traymodel.Menu) bool {
		return strings.Contains(line(m), "on the CPU (fallback), 15 s") && strings.Contains(line(m), "fallbacks: 1")
	})
}
