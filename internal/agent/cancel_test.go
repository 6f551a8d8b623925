//go:build linux

package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/framing"
)

// TestSessionEndDuringAPictureStopsEverything: the relay closes the session
// while the encoder is still reading (Strata sent QUIT): the agent gives the
// picture up, kills its encoder and ends, well before the encode would have.
func TestSessionEndDuringAPictureStopsEverything(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "STRATA_STANDIN_ENCODE_MS=30000")
	scratch := t.TempDir()
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, ScratchParent: scratch})
	pid := s.status().PID
	s.w.Write(framing.Encode, framing.PutID(1), png)
	time.Sleep(300 * time.Millisecond) // the picture is with the encoder
	s.in.Close()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatalf("the agent ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent still waits for a picture nobody wants (the encode takes 30 s)")
	}
	if processAlive(pid) {
		t.Fatalf("encoder %d still runs after the session ended mid-picture", pid)
	}
}

// TestIdleStopChangesWithoutRestart: a running agent in keep-running mode is
// told an idle stop (SetIdle) and applies it; then told 0 again.
func TestIdleStopChangesWithoutRestart(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "")
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, ScratchParent: t.TempDir()})
	if st := s.status(); st.Encoder != "running" || st.IdleStopS != 0 {
		t.Fatalf("keep-running mode: %+v", st)
	}
	s.w.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: 1})
	if st := s.status(); st.IdleStopS != 1 {
		t.Fatalf("after SetIdle 1: idle stop %d", st.IdleStopS)
	}
	typ, p := s.next() // the idle stop comes by itself, within a few seconds
	var e framing.AgentEvent
	json.Unmarshal(p, &e)
	if typ != framing.Event || e.Kind != "idle_stopped" || e.IdleS != 1 {
		t.Fatalf("expected an idle stop, got %q %s", typ, p)
	}
	s.w.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: 0})
	var evs []framing.AgentEvent
	s.w.Write(framing.Encode, framing.PutID(2), png)
	if typ, _ := s.nextSkipping(&evs); typ != framing.Result {
		t.Fatalf("picture after the change: %q", typ)
	}
	if st := s.status(); st.IdleStopS != 0 || st.Encoder != "running" {
		t.Fatalf("after SetIdle 0: %+v", st)
	}
}
