package controlapi

import (
	"strings"
	"testing"
	"time"
)

// TestEncoderStatesTable: every encoder state has one row with its word,
// and only a running encoder shows its VRAM.
func TestEncoderStatesTable(t *testing.T) {
	want := []string{EncoderUnknown, EncoderOff, EncoderStarting, EncoderReady, EncoderIdle, EncoderWaking, EncoderFailed, EncoderDegraded, EncoderUnloaded}
	seen := map[string]int{}
	for _, r := range EncoderStates {
		seen[r.ID]++
		if r.Word == "" {
			t.Errorf("state %q has no word", r.ID)
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("state %q has %d rows, want 1", id, seen[id])
		}
	}
	for id, holds := range map[string]bool{EncoderReady: true, EncoderDegraded: true, EncoderStarting: true,
		EncoderIdle: false, EncoderUnloaded: false, EncoderFailed: false, EncoderOff: false} {
		if got := (VisionState{Encoder: id}).EncoderHoldsVRAM(); got != holds {
			t.Errorf("%s: holds VRAM %v, want %v", id, got, holds)
		}
	}
	if EncoderStateInfo("something-new").ID != EncoderUnknown {
		t.Error("an unknown state does not read as unknown")
	}
}

func TestEncoderText(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 14, 2, 0, 0, time.UTC)
	clock := func(t time.Time) string { return t.Format("15:04") }
	cases := []struct {
		st   State
		want string
	}{
		{State{Vision: VisionState{Encoder: EncoderReady}}, "ready"},
		{State{Vision: VisionState{Encoder: EncoderReady, WokeAt: t0, LastWakeMS: 1234}}, "ready (woke in 1.2 s at 14:02)"},
		{State{Vision: VisionState{Encoder: EncoderIdle, IdleStopped: t0}}, "idle-stopped at 14:02 (VRAM given back; the next picture wakes it)"},
		{State{Vision: VisionState{Encoder: EncoderUnloaded}, Server: ServerState{Unloaded: t0}}, "unloaded with the model at 14:02 (VRAM given back; the next request loads both again)"},
		{State{Vision: VisionState{Encoder: EncoderDegraded, Degraded: "no NVIDIA driver there"}}, "degraded (it reads on a CPU where a GPU was expected: no NVIDIA driver there)"},
		{State{Vision: VisionState{Encoder: EncoderFailed, Error: "out of VRAM"}}, "failed: out of VRAM"},
		{State{Vision: VisionState{Encoder: EncoderStarting}}, "starting"},
		{State{Vision: VisionState{Encoder: EncoderOff}}, "off (text only)"},
		{State{Vision: VisionState{Encoder: ""}}, "state unknown"},
	}
	for _, c := range cases {
		if got := c.st.EncoderText(clock); got != c.want {
			t.Errorf("%s: %q, want %q", c.st.Vision.Encoder, got, c.want)
		}
		if strings.Contains(c.st.EncoderText(clock), "MiB") {
			t.Errorf("%s: the state words name VRAM figures", c.st.Vision.Encoder)
		}
	}
}
