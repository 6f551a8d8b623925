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
	send(2560,
		events.New("", events.RemoteConnectedDetails{Host: "pc2.lan", ConnectMS: 40, RTTms: 0.4}),
		events.New("", events.PictureEncodedDetails{Where: "remote", MS: 2830, Tokens: 1024}))
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
		events.New("second PC pc2.lan did not answer within 5s", events.RemoteUnreachableDetails{Host: "pc2.lan", Reason: "timed out"}),
		events.New("waking pc2.lan", events.RemoteWakeDetails{Host: "pc2.lan", MAC: "aa:bb:cc:dd:ee:ff"}),
		events.New("pc2.lan did not answer within 60 s of the wake", events.RemoteWakeDetails{Host: "pc2.lan", OK: new(false), WaitS: 60}),
		events.New("pictures are read on this PC's CPU until the second PC answers", events.VisionFallbackDetails{Host: "pc2.lan"}),
		events.New("", events.PictureEncodedDetails{Where: "fallback_cpu", MS: 15270}))
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
		events.New("pc2.lan woke", events.RemoteWakeDetails{Host: "pc2.lan", OK: new(true), WokeMS: 4200}),
		events.New("pc2.lan answers again", events.RemoteReachableDetails{Host: "pc2.lan"}),
		events.New("", events.PictureEncodedDetails{Where: "remote", MS: 2900}))
	st, _ = c.State(ctx)
	if st.Vision.LastWhere != "remote" || st.Vision.LastWake != "woke" || st.Vision.LastWokeMS != 4200 || !st.Remote.Reachable || st.Vision.Fallbacks != 1 {
		t.Fatalf("back: vision %+v remote %+v", st.Vision, st.Remote)
	}
}
