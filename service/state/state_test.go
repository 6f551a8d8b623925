package state

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

func ev(kind events.Kind, msg string, kv ...any) events.Event {
	d := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i].(string)] = kv[i+1]
	}
	return events.Event{Kind: kind, Message: msg, Details: d, Time: time.Unix(1000, 0)}
}

func TestFoldLifecycle(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderUnknown}}
	steps := []struct {
		e     events.Event
		check func(s controlapi.State) bool
	}{
		{ev(events.ServerStarting, "", "port", 8080), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseStarting && s.Server.Port == 8080
		}},
		{ev(events.ServerProgress, "filling the GPU's expert cache"), func(s controlapi.State) bool {
			return s.Server.Detail == "filling the GPU's expert cache"
		}},
		{ev(events.ExpertCache, "", "experts", 3112, "gib", 5.96), func(s controlapi.State) bool {
			return s.Server.Experts == 3112 && s.Server.ExpertCacheGiB == 5.96
		}},
		{ev(events.EncoderStarting, ""), func(s controlapi.State) bool { return s.Vision.Encoder == controlapi.EncoderStarting }},
		{ev(events.ServerReady, "", "url", "http://127.0.0.1:8080/v1", "pid", 42, "model", "m", "context", 32768, "images", true), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseReady && s.Server.PID == 42 && s.Server.Context == 32768 &&
				s.Server.Detail == "" && s.Vision.Encoder == controlapi.EncoderReady
		}},
		{ev(events.EncoderIdleStopped, "", "idle_s", 300.0), func(s controlapi.State) bool { return s.Vision.Encoder == controlapi.EncoderIdle }},
		// Through JSON (a relay line), numbers are float64.
		{ev(events.EncoderWoke, "", "shrink_ms", 120.0, "start_ms", 850.0, "encode_ms", 640.0, "wake_ms", 970.0), func(s controlapi.State) bool {
			return s.Vision.Encoder == controlapi.EncoderReady && s.Vision.LastWakeMS == 970 && s.Vision.LastPictureMS == 640
		}},
		{ev(events.RemoteUnreachable, "pc2: no route to host", "host", "pc2"), func(s controlapi.State) bool {
			return s.Remote != nil && !s.Remote.Reachable && s.Remote.Reason == "pc2: no route to host" && s.Remote.Host == "pc2"
		}},
		{ev(events.RemoteConnected, "", "host", "pc2", "rtt_ms", 1.5), func(s controlapi.State) bool {
			return s.Remote.Reachable && s.Remote.Reason == "" && s.Remote.RTTms == 1.5
		}},
		{ev(events.ServerExited, "the Strata server exited unexpectedly (exit code 3)", "expected", false, "code", 3), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseStopped && s.Server.PID == 0 && s.Server.LastError != ""
		}},
		{ev(events.ServerRestarting, "restarting in 2s", "attempt", 1), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseRestarting && s.Server.Restarts == 1
		}},
		{ev(events.ServerReady, "", "pid", 43), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseReady && s.Server.LastError == "" && s.Server.PID == 43
		}},
		{ev(events.EncoderFailed, "the vision encoder did not start: x"), func(s controlapi.State) bool {
			return s.Vision.Encoder == controlapi.EncoderFailed && s.Vision.Error != ""
		}},
		{ev(events.ConfigChanged, "", "placement", "off", "path", "/s/strata-x.json"), func(s controlapi.State) bool {
			return s.Vision.Placement == "off" && s.Vision.Encoder == controlapi.EncoderOff && s.Vision.Error == "" && s.Config.Path == "/s/strata-x.json"
		}},
		{ev(events.ServerFailed, "port 8080 is already in use"), func(s controlapi.State) bool {
			return s.Server.Phase == controlapi.PhaseFailed && s.Server.LastError == "port 8080 is already in use"
		}},
		{ev(events.ServerStopped, ""), func(s controlapi.State) bool { return s.Server.Phase == controlapi.PhaseStopped }},
	}
	for i, s := range steps {
		Fold(&st, s.e)
		if !s.check(st) {
			b, _ := json.MarshalIndent(st, "", " ")
			t.Fatalf("step %d (%s): state\n%s", i, s.e.Kind, b)
		}
	}
}

// A client that reads the state and then follows events from its Seq sees
// every later event exactly once, even while events are being published.
func TestSnapshotSeqMatchesTheBus(t *testing.T) {
	bus := events.NewBus(100000)
	tr := New(bus, controlapi.State{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				tr.Publish(events.Event{Kind: events.ServerProgress})
			}
		}()
	}
	snap := tr.Snapshot()
	wg.Wait()
	evs, _ := bus.Since(snap.Seq)
	if got := snap.Seq + uint64(len(evs)); got != 2000 {
		t.Fatalf("snapshot at %d plus %d later events = %d, want 2000", snap.Seq, len(evs), got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := bus.Wait(ctx, 1999); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkPublishAndFold(b *testing.B) {
	tr := New(events.NewBus(1000), controlapi.State{})
	e := events.New("", events.ExpertCacheDetails{Experts: 3112, GiB: 5.96})
	for i := 0; i < b.N; i++ {
		tr.Publish(e)
	}
}

// Dropped log lines: the count and the problem while it lasts, the count
// alone after writing works again.
func TestFoldLogDropped(t *testing.T) {
	var st controlapi.State
	Fold(&st, ev(events.ServerLogDropped, "the disk holding /var/log is full", "dropped", 3, "writing", false))
	if st.Server.LogDropped != 3 || st.Server.LogProblem != "the disk holding /var/log is full" {
		t.Fatalf("while dropping: %+v", st.Server)
	}
	// Details arrive as float64 after a JSON round trip.
	Fold(&st, ev(events.ServerLogDropped, "writing again", "dropped", float64(9), "writing", true))
	if st.Server.LogDropped != 9 || st.Server.LogProblem != "" {
		t.Fatalf("after recovery: %+v", st.Server)
	}
}

// The relay's events (through POST /v1/relay, as JSON: numbers are float64)
// fold into what the tray's relay view reads.
func TestFoldRelayEvents(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderUnknown}}
	steps := []struct {
		e     events.Event
		check func(s controlapi.State) bool
	}{
		{ev(events.PictureEncoded, "", "where", "remote", "ms", 2830.0), func(s controlapi.State) bool {
			return s.Vision.LastWhere == "remote" && s.Vision.LastPictureMS == 2830 && s.Vision.Encoder == controlapi.EncoderReady
		}},
		{ev(events.RemoteUnreachable, "did not answer within 5s", "host", "pc2"), func(s controlapi.State) bool {
			return s.Remote != nil && !s.Remote.Reachable && s.Remote.Host == "pc2" && s.Remote.Reason != ""
		}},
		{ev(events.RemoteWake, "waking", "host", "pc2", "mac", "aa:bb:cc:dd:ee:ff"), func(s controlapi.State) bool {
			return s.Vision.Wakes == 1 && s.Vision.LastWake == "sent"
		}},
		{ev(events.RemoteWake, "did not answer", "host", "pc2", "ok", false), func(s controlapi.State) bool {
			return s.Vision.Wakes == 1 && s.Vision.LastWake == "no_answer"
		}},
		{ev(events.VisionFallback, "read on this CPU"), func(s controlapi.State) bool {
			return s.Vision.Fallbacks == 1 && !s.Vision.LastFallback.IsZero()
		}},
		{ev(events.PictureEncoded, "", "where", "fallback_cpu", "ms", 15270.0), func(s controlapi.State) bool {
			return s.Vision.LastWhere == "fallback_cpu" && s.Vision.LastPictureMS == 15270
		}},
		{ev(events.RemoteWake, "woke", "host", "pc2", "ok", true, "woke_ms", 4200.0), func(s controlapi.State) bool {
			return s.Vision.LastWake == "woke" && s.Vision.LastWokeMS == 4200
		}},
		{ev(events.RemoteReachable, "back", "host", "pc2"), func(s controlapi.State) bool {
			return s.Remote.Reachable && s.Remote.Reason == ""
		}},
		{ev(events.PictureEncoded, "", "where", "local_cpu", "ms", 900.0), func(s controlapi.State) bool {
			return s.Vision.LastWhere == "local_cpu" && s.Vision.Fallbacks == 1
		}},
	}
	for i, s := range steps {
		Fold(&st, s.e)
		if !s.check(st) {
			b, _ := json.Marshal(st)
			t.Fatalf("step %d (%s): %s", i, s.e.Kind, b)
		}
	}
}

// TestFoldPictureOutcomes: every picture's outcome (the relay's
// vision.picture, OK or not) changes the state: a failure (a timeout, an
// encoder's ERR, a corrupt settings file) makes the encoder line say so with
// the reason; pictures off is no failure of the encoder; a success clears a
// failure. Reachability follows the current relay's last connection and
// pictures: a connection that closed is not an unreachable PC, a picture read
// there makes it reachable, an unreachable dial does not.
func TestFoldPictureOutcomes(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady},
		Remote: &controlapi.RemoteInfo{Host: "pc2", Reachable: true}}
	steps := []struct {
		name  string
		e     events.Event
		check func(s controlapi.State) bool
	}{
		{"a timed-out picture", ev(events.PictureEncoded, "second PC pc2 gave no result within 15s", "ok", false, "where", "remote", "ms", 15000),
			func(s controlapi.State) bool {
				return s.Vision.Encoder == controlapi.EncoderFailed && s.Vision.Error == "second PC pc2 gave no result within 15s" && s.Vision.LastOK != nil && !*s.Vision.LastOK
			}},
		{"the next one read there", ev(events.PictureEncoded, "", "ok", true, "where", "remote", "ms", 1600),
			func(s controlapi.State) bool {
				return s.Vision.Encoder == controlapi.EncoderReady && s.Vision.Error == "" && *s.Vision.LastOK && s.Vision.LastPictureMS == 1600
			}},
		{"an encoder's ERR", ev(events.PictureEncoded, "cannot read the image x.img", "ok", false, "where", "local_cpu"),
			func(s controlapi.State) bool {
				return s.Vision.Encoder == controlapi.EncoderFailed && s.Vision.Error == "cannot read the image x.img"
			}},
		{"a corrupt settings file", ev(events.PictureEncoded, "the companion settings s.json are not valid JSON", "ok", false, "where", "none"),
			func(s controlapi.State) bool {
				return s.Vision.Error == "the companion settings s.json are not valid JSON"
			}},
		{"pictures off", ev(events.PictureEncoded, "pictures are switched off in Strata Companion", "ok", false, "where", "off"),
			func(s controlapi.State) bool {
				return s.Vision.Encoder != controlapi.EncoderFailed || s.Vision.Error != "pictures are switched off in Strata Companion"
			}},
		{"a success clears it", ev(events.PictureEncoded, "", "ok", true, "where", "remote", "ms", 1500),
			func(s controlapi.State) bool {
				return s.Vision.Encoder == controlapi.EncoderReady && s.Vision.Error == ""
			}},
		{"a connection that closed", ev(events.RemoteDisconnected, "the connection to second PC pc2 closed", "host", "pc2"),
			func(s controlapi.State) bool { return s.Remote.Reachable }},
		{"a dial that failed", ev(events.RemoteUnreachable, "second PC pc2 did not answer within 5s", "host", "pc2"),
			func(s controlapi.State) bool { return !s.Remote.Reachable && s.Remote.Reason != "" }},
		{"a picture read there again", ev(events.PictureEncoded, "", "ok", true, "where", "remote", "host", "pc2"),
			func(s controlapi.State) bool { return s.Remote.Reachable && s.Remote.Reason == "" }},
		{"the encoder on its GPU", ev(events.EncoderReady, "", "where", "remote", "host", "pc2", "device", "gpu", "gpu", "RTX 3060 Laptop GPU", "vram_mib", 1383, "expected_device", "gpu"),
			func(s controlapi.State) bool {
				return s.Vision.Device == "gpu" && s.Vision.GPU == "RTX 3060 Laptop GPU" && s.Vision.VRAMMiB == 1383 && s.Vision.Degraded == "" && s.Vision.Host == "pc2"
			}},
		{"then on its CPU where a GPU was expected", ev(events.EncoderReady, "", "where", "remote", "host", "pc2", "device", "cpu", "expected_device", "gpu"),
			func(s controlapi.State) bool {
				return s.Vision.Device == "cpu" && s.Vision.Encoder == controlapi.EncoderDegraded
			}},
		{"degraded, with why", ev(events.EncoderDegraded, "pictures are read on the second PC's CPU, not its GPU (no CUDA device)"),
			func(s controlapi.State) bool {
				return s.Vision.Degraded == "pictures are read on the second PC's CPU, not its GPU (no CUDA device)"
			}},
		{"a picture there stays degraded", ev(events.PictureEncoded, "", "ok", true, "where", "remote"),
			func(s controlapi.State) bool { return s.Vision.Encoder == controlapi.EncoderDegraded }},
	}
	for _, s := range steps {
		Fold(&st, s.e)
		if !s.check(st) {
			t.Errorf("%s: vision %+v remote %+v", s.name, st.Vision, st.Remote)
		}
	}
}

// TestFoldFollowsTheCurrentRelay: reports from a new relay process (Strata
// restarted it) start from nothing: the last relay's failure and degraded
// encoder are not the new one's.
func TestFoldFollowsTheCurrentRelay(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "remote"}}
	Fold(&st, ev(events.EncoderReady, "", "relay", 100, "where", "remote", "device", "cpu", "expected_device", "gpu"))
	Fold(&st, ev(events.PictureEncoded, "timed out", "relay", 100, "ok", false, "where", "remote"))
	if st.Vision.Encoder != controlapi.EncoderFailed || st.Vision.Device != "cpu" {
		t.Fatalf("first relay: %+v", st.Vision)
	}
	Fold(&st, ev(events.RemoteConnected, "", "relay", 200, "host", "pc2"))
	if st.Vision.Encoder == controlapi.EncoderFailed || st.Vision.Device != "" || st.Vision.Degraded != "" || st.Vision.Error != "" || st.Vision.Relay != 200 {
		t.Errorf("a new relay carried the old one's state: %+v", st.Vision)
	}
}
