package controlapi

import (
	"fmt"
	"time"
)

// EncoderUnloaded: Strata unloaded its model (idle_unload_s, or POST
// /v1/unload) and ended the encoder with it (a relay, its ssh session and
// the second PC's encoder too); the next request starts both again, the
// encoder first.
const EncoderUnloaded = "unloaded"

// EncoderInfo is what the product says of one encoder state: the one table
// `strata-service status` and the tray read, so the two never disagree and
// a state cannot be missing from one of them.
type EncoderInfo struct {
	ID string
	// Word is the state in a word or two ("idle-stopped"); the tray writes
	// "encoder " + Word.
	Word string
	// Note says what the state means for the person, after the word
	// ("VRAM given back; the next picture wakes it"); "" when the word says
	// it all.
	Note string
	// Running: an encoder process runs (or is being started), so where it
	// reads pictures and the VRAM it takes are shown; false for a stopped
	// one (idle, unloaded, failed, off), whose VRAM was given back.
	Running bool
}

// EncoderStates is the table, one row per Encoder* state.
var EncoderStates = []EncoderInfo{
	{ID: EncoderReady, Word: "ready", Running: true},
	{ID: EncoderStarting, Word: "starting", Running: true},
	{ID: EncoderWaking, Word: "waking", Note: "starting for a picture", Running: true},
	{ID: EncoderDegraded, Word: "degraded", Note: "it reads on a CPU where a GPU was expected", Running: true},
	{ID: EncoderIdle, Word: "idle-stopped", Note: "VRAM given back; the next picture wakes it"},
	{ID: EncoderUnloaded, Word: "unloaded with the model", Note: "VRAM given back; the next request loads both again"},
	{ID: EncoderFailed, Word: "failed"},
	{ID: EncoderOff, Word: "off", Note: "text only"},
	{ID: EncoderUnknown, Word: "state unknown"},
}

// EncoderStateInfo is id's row of EncoderStates (the unknown row for an id
// this build does not know).
func EncoderStateInfo(id string) EncoderInfo {
	for _, i := range EncoderStates {
		if i.ID == id {
			return i
		}
	}
	return EncoderStateInfo(EncoderUnknown)
}

// EncoderHoldsVRAM reports whether the encoder's VRAM line (and where it
// reads) describes something running now.
func (v VisionState) EncoderHoldsVRAM() bool { return EncoderStateInfo(v.Encoder).Running }

// EncoderText is the encoder's state in words with the times that matter;
// clock writes a time of day ("14:02"). Examples:
//
//	ready (woke in 1.2 s at 14:07)
//	idle-stopped at 14:02 (VRAM given back; the next picture wakes it)
//	unloaded with the model at 14:05 (VRAM given back; the next request loads both again)
//	degraded (it reads on a CPU where a GPU was expected: no GPU driver there)
//	failed: out of VRAM
func (st *State) EncoderText(clock func(time.Time) string) string {
	v := st.Vision
	info := EncoderStateInfo(v.Encoder)
	s := info.Word
	at := func(t time.Time) {
		if !t.IsZero() {
			s += " at " + clock(t)
		}
	}
	note := info.Note
	switch v.Encoder {
	case EncoderReady:
		if !v.WokeAt.IsZero() && v.LastWakeMS > 0 {
			s += fmt.Sprintf(" (woke in %s at %s)", Seconds(v.LastWakeMS), clock(v.WokeAt))
		}
	case EncoderIdle:
		at(v.IdleStopped)
	case EncoderUnloaded:
		at(st.Server.Unloaded)
	case EncoderDegraded:
		if v.Degraded != "" {
			note += ": " + v.Degraded
		}
	case EncoderFailed:
		if v.Error != "" {
			return s + ": " + v.Error
		}
	}
	if note != "" {
		s += " (" + note + ")"
	}
	return s
}

// Seconds writes milliseconds as "0.4 s", "2.8 s", "15 s".
func Seconds(ms int) string {
	if ms >= 10000 {
		return fmt.Sprintf("%d s", (ms+500)/1000)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}
