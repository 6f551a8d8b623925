package state

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/loglines"
)

func at(e events.Event, sec int64) events.Event {
	e.Time = time.Unix(sec, 0)
	return e
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// TestFoldUnloadAndReload: Strata's idle unload ends the engine and the
// encoder (the relay with it). The state then says "unloaded with the
// model", holds no VRAM line and no relay PID, and a late report of the
// ended relay changes nothing; the reload shows "starting" only until the
// encoder's start is over (Strata starts the engine after the encoder's
// READY: the engine's expert cache line ends it), or until /health says
// loaded.
func TestFoldUnloadAndReload(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderUnknown}}
	seq := []events.Event{
		ev(events.ServerStarting, "", "port", 8080),
		ev(events.EncoderStarting, "starting the vision encoder"),
		ev(events.ServerReady, "", "pid", 42, "images", true),
		ev(events.EncoderReady, "", "relay", 777.0, "where", "remote", "host", "pc2", "device", "gpu", "gpu", "RTX 3060", "vram_mib", 1383.0),
		ev(events.PictureEncoded, "", "relay", 777.0, "ok", true, "where", "remote", "ms", 2800.0),
	}
	for _, e := range seq {
		Fold(&st, e)
	}
	if st.Vision.Encoder != controlapi.EncoderReady || st.Vision.Relay != 777 || st.Vision.VRAMMiB != 1383 {
		t.Fatalf("before the unload: %+v", st.Vision)
	}
	// The line as the supervisor parses it.
	line, ok := loglines.Parse(loglines.Stdout, "[strata] model unloaded after 300 s idle; the next request loads it again")
	if !ok || line.Kind != events.ModelUnloaded {
		t.Fatalf("the unload line is not recognised: %+v", line)
	}
	Fold(&st, at(line, 2000))
	v := st.Vision
	if v.Encoder != controlapi.EncoderUnloaded || v.Relay != 0 || v.VRAMMiB != 0 || v.Device != "" || v.GPU != "" || v.EncoderHoldsVRAM() {
		t.Fatalf("after the unload: %+v", v)
	}
	if st.Server.Unloaded.IsZero() || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("the server after the unload: %+v", st.Server)
	}
	if got := st.EncoderText(clock); !strings.HasPrefix(got, "unloaded with the model at ") || !strings.Contains(got, "VRAM given back") {
		t.Errorf("words after the unload: %q", got)
	}
	if v.LastPicture.IsZero() {
		t.Error("the unload forgot the last picture (history stays)")
	}
	// The ended relay's connection closes after the unload: not folded.
	Fold(&st, ev(events.RemoteDisconnected, "the connection to second PC pc2 closed", "relay", 777.0, "host", "pc2"))
	Fold(&st, ev(events.PictureEncoded, "given up", "relay", 777.0, "ok", false, "where", "remote"))
	if st.Vision.Relay != 0 || st.Vision.Encoder != controlapi.EncoderUnloaded {
		t.Fatalf("a late report of the ended relay changed the state: %+v", st.Vision)
	}
	// A text request reloads: the encoder first, then the engine.
	Fold(&st, ev(events.EncoderStarting, "starting the vision encoder"))
	if st.Vision.Encoder != controlapi.EncoderStarting {
		t.Fatalf("the reload's encoder start: %q", st.Vision.Encoder)
	}
	Fold(&st, ev(events.ExpertCache, "", "experts", 3641, "gib", 6.96))
	if st.Vision.Encoder != controlapi.EncoderReady {
		t.Fatalf("the engine started (so the encoder said READY), but the encoder is %q", st.Vision.Encoder)
	}
	Fold(&st, ev(events.ModelLoaded, "the model is loaded again"))
	if !st.Server.Unloaded.IsZero() || st.Server.Detail != "" {
		t.Fatalf("after the reload: %+v", st.Server)
	}
	// The new relay reports: it is the current one.
	Fold(&st, ev(events.EncoderReady, "", "relay", 901.0, "where", "remote", "device", "gpu", "gpu", "RTX 3060", "vram_mib", 1383.0))
	if st.Vision.Relay != 901 || st.Vision.VRAMMiB != 1383 {
		t.Fatalf("the new relay's report: %+v", st.Vision)
	}
}

// TestFoldUnloadedThenLoadedWithoutLines: an unload by request is seen on
// /health only (no line), and so may be the reload: loaded again means the
// encoder was started first.
func TestFoldUnloadedThenLoadedWithoutLines(t *testing.T) {
	st := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady},
		Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady, Device: "gpu", GPU: "RTX 5080", VRAMMiB: 1383}}
	Fold(&st, ev(events.ModelUnloaded, "the model was unloaded", "source", "health"))
	if st.Vision.Encoder != controlapi.EncoderUnloaded || st.Vision.VRAMMiB != 0 {
		t.Fatalf("after the unload: %+v", st.Vision)
	}
	Fold(&st, ev(events.ModelLoaded, "the model is loaded again", "source", "health"))
	if st.Vision.Encoder != controlapi.EncoderReady || !st.Server.Unloaded.IsZero() {
		t.Fatalf("after the reload: %+v %+v", st.Vision, st.Server)
	}
}

// TestFoldUnloadWithVisionOff: nothing to unload of an encoder that is off.
func TestFoldUnloadWithVisionOff(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "off", Encoder: controlapi.EncoderOff}}
	Fold(&st, ev(events.ModelUnloaded, "the model was unloaded after 60 s idle"))
	if st.Vision.Encoder != controlapi.EncoderOff {
		t.Fatalf("vision off after an unload: %q", st.Vision.Encoder)
	}
}

// TestFoldIdleStopAndWake: the idle stop's time and the wake's time and
// length are kept, and the words say them; the VRAM is not shown while the
// encoder is stopped.
func TestFoldIdleStopAndWake(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady, Device: "gpu", GPU: "RTX 3060", VRAMMiB: 1383}}
	Fold(&st, at(ev(events.EncoderIdleStopped, "", "idle_s", 300.0), 3600))
	if st.Vision.Encoder != controlapi.EncoderIdle || !st.Vision.IdleStopped.Equal(time.Unix(3600, 0)) || st.Vision.EncoderHoldsVRAM() {
		t.Fatalf("idle-stopped: %+v", st.Vision)
	}
	if got, want := st.EncoderText(clock), "idle-stopped at 01:00:00 (VRAM given back; the next picture wakes it)"; got != want {
		t.Errorf("idle words %q, want %q", got, want)
	}
	Fold(&st, at(ev(events.EncoderWoke, "", "start_ms", 1200.0, "encode_ms", 600.0), 3700))
	if st.Vision.Encoder != controlapi.EncoderReady || !st.Vision.IdleStopped.IsZero() || !st.Vision.WokeAt.Equal(time.Unix(3700, 0)) {
		t.Fatalf("woke: %+v", st.Vision)
	}
	if got, want := st.EncoderText(clock), "ready (woke in 1.2 s at 01:01:40)"; got != want {
		t.Errorf("wake words %q, want %q", got, want)
	}
}

// TestFoldVisionOffForgetsWhere: after vision off, nothing says where the
// last encoder read (no stale "Pictures: this PC: its CPU").
func TestFoldVisionOffForgetsWhere(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady, Device: "cpu", LastPictureMS: 600}}
	Fold(&st, ev(events.ConfigChanged, "", "placement", "off"))
	if st.Vision.Device != "" || st.Vision.Encoder != controlapi.EncoderOff {
		t.Fatalf("after vision off: %+v", st.Vision)
	}
}

// TestFoldServerExitEndsTheEncoder: the encoder ends with its server: no
// relay PID, no VRAM line kept.
func TestFoldServerExitEndsTheEncoder(t *testing.T) {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderReady, Relay: 5, Device: "gpu", VRAMMiB: 1383}}
	Fold(&st, ev(events.ServerExited, "the Strata server stopped", "expected", true))
	if st.Vision.Relay != 0 || st.Vision.VRAMMiB != 0 {
		t.Fatalf("after the exit: %+v", st.Vision)
	}
}

// A start's duration, from server.starting to server.ready, is kept for
// the tray's "text stops for about N s".
func TestLastStartIsKept(t *testing.T) {
	var st controlapi.State
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	start := events.Event{Kind: events.ServerStarting, Time: t0}
	ready := events.Event{Kind: events.ServerReady, Time: t0.Add(47 * time.Second)}
	Fold(&st, start)
	Fold(&st, ready)
	if st.Server.LastStartS != 47 {
		t.Fatalf("last start %v s, want 47", st.Server.LastStartS)
	}
	// A ready seen again while running (a reload) is not a start.
	Fold(&st, events.Event{Kind: events.ServerReady, Time: t0.Add(time.Hour)})
	if st.Server.LastStartS != 47 {
		t.Errorf("a second ready changed it to %v s", st.Server.LastStartS)
	}
}
