//go:build linux

package agent

import (
	"encoding/json"
	"testing"

	"github.com/strata-companion/companion/internal/framing"
)

// TestIdleStopChangeDoesNotWakeAStoppedEncoder: an encoder stopped for idle
// stays stopped when the idle stop changes (SetIdle, what `remote
// idle-stop` leads to): a start costs a warm-up on a real GPU, and nothing
// asked for a picture.
func TestIdleStopChangeDoesNotWakeAStoppedEncoder(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "")
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, ScratchParent: t.TempDir()})
	s.w.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: 1})
	for {
		typ, p := s.next()
		var e framing.AgentEvent
		json.Unmarshal(p, &e)
		if typ == framing.Event && e.Kind == "idle_stopped" {
			break
		}
		if typ != framing.Event {
			t.Fatalf("expected an idle stop, got %q %s", typ, p)
		}
	}
	stopped := s.status()
	if stopped.Encoder == "running" {
		t.Fatalf("after the idle stop: %+v", stopped)
	}
	for _, secs := range []int{600, 0, 30} {
		s.w.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: secs})
		if st := s.status(); st.Encoder != stopped.Encoder || st.IdleStopS != secs {
			t.Fatalf("after SetIdle %d the encoder is %q (was %q), idle stop %d", secs, st.Encoder, stopped.Encoder, st.IdleStopS)
		}
	}
}
