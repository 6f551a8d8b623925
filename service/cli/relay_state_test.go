//go:build !windows

package cli

import (
	"context"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

// Through the daemon: what the relay reports (POST /v1/relay, as
// controlapi.Client.ReportRelay sends it) is in /v1/events as sent and folded
// into /v1/state, which is what the tray's relay view starts from: where the
// last picture went, a failover, a wake and its outcome, the second PC
// unreachable and back, n_embd (also recorded in the settings).
func TestRelayReportsFoldIntoTheServiceState(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	c, _ := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	paired := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "pc2.lan", User: "me"}}
	if err := paired.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	rc, err := controlapi.NewClient() // the relay finds the service as every client does
	if err != nil {
		t.Fatal(err)
	}
	send := func(nEmbd int, evs ...events.Event) {
		t.Helper()
		if err := rc.ReportRelay(ctx, controlapi.RelayReport{NEmbd: nEmbd, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(k events.Kind, msg string, d map[string]any) events.Event {
		return events.Event{Kind: k, Message: msg, Details: d}
	}
	send(2560,
		ev(events.RemoteConnected, "", map[string]any{"host": "pc2.lan", "connect_ms": 40, "rtt_ms": 0.4}),
		ev(events.PictureEncoded, "", map[string]any{"where": "remote", "ms": 2830, "tokens": 1024}))
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Vision.LastWhere != "remote" || st.Vision.LastPictureMS != 2830 || st.Remote == nil || !st.Remote.Reachable || st.Remote.NEmbd != 2560 {
		t.Fatalf("after a remote picture: vision %+v remote %+v", st.Vision, st.Remote)
	}
	if s, err := settings.Load(locations.SettingsFile()); err != nil || s.Remote.NEmbd != 2560 {
		t.Errorf("n_embd not recorded in the settings: %v", err)
	}

	send(0,
		ev(events.RemoteUnreachable, "second PC pc2.lan did not answer within 5s", map[string]any{"host": "pc2.lan", "reason": "timed out"}),
		ev(events.RemoteWake, "waking pc2.lan", map[string]any{"host": "pc2.lan", "mac": "aa:bb:cc:dd:ee:ff"}),
		ev(events.RemoteWake, "pc2.lan did not answer within 60 s of the wake", map[string]any{"host": "pc2.lan", "ok": false, "wait_s": 60}),
		ev(events.VisionFallback, "pictures are read on this PC's CPU until the second PC answers", map[string]any{"host": "pc2.lan"}),
		ev(events.PictureEncoded, "", map[string]any{"where": "fallback_cpu", "ms": 15270}))
	seen := follow(t, c, &since, events.RemoteUnreachable, events.RemoteWake, events.RemoteWake, events.VisionFallback, events.PictureEncoded)
	if len(seen) == 0 {
		t.Fatal("no events")
	}
	st, _ = c.State(ctx)
	if st.Vision.LastWhere != "fallback_cpu" || st.Vision.Fallbacks != 1 || st.Vision.Wakes != 1 || st.Vision.LastWake != "no_answer" ||
		st.Remote.Reachable || st.Remote.Reason == "" {
		t.Fatalf("after a failover: vision %+v remote %+v", st.Vision, st.Remote)
	}
	if st.Seq < seen[len(seen)-1].Seq {
		t.Errorf("state seq %d behind the events' %d", st.Seq, seen[len(seen)-1].Seq)
	}

	send(0,
		ev(events.RemoteWake, "pc2.lan woke", map[string]any{"host": "pc2.lan", "ok": true, "woke_ms": 4200}),
		ev(events.RemoteReachable, "pc2.lan answers again", map[string]any{"host": "pc2.lan"}),
		ev(events.PictureEncoded, "", map[string]any{"where": "remote", "ms": 2900}))
	st, _ = c.State(ctx)
	if st.Vision.LastWhere != "remote" || st.Vision.LastWake != "woke" || st.Vision.LastWokeMS != 4200 || !st.Remote.Reachable || st.Vision.Fallbacks != 1 {
		t.Fatalf("back: vision %+v remote %+v", st.Vision, st.Remote)
	}
}
