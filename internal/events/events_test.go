package events

import (
	"context"
	"testing"
	"time"
)

func TestSinceResumesWithoutLoss(t *testing.T) {
	b := NewBus(3)
	for i := 0; i < 5; i++ {
		b.Publish(Event{Kind: ServerProgress})
	}
	evs, gap := b.Since(3)
	if len(evs) != 2 || evs[0].Seq != 4 || evs[1].Seq != 5 || gap {
		t.Fatalf("Since(3) = %+v gap=%v", evs, gap)
	}
	evs, gap = b.Since(0)
	if len(evs) != 3 || !gap {
		t.Fatalf("Since(0) after overflow = %d events gap=%v, want 3 and a gap", len(evs), gap)
	}
}

func TestWaitWakesOnPublishAndHonoursContext(t *testing.T) {
	b := NewBus(10)
	done := make(chan []Event)
	go func() {
		evs, _, _ := b.Wait(context.Background(), 0)
		done <- evs
	}()
	time.Sleep(10 * time.Millisecond)
	b.Publish(Event{Kind: ServerReady})
	if evs := <-done; len(evs) != 1 || evs[0].Kind != ServerReady {
		t.Fatalf("got %+v", evs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := b.Wait(ctx, 1); err == nil {
		t.Fatal("Wait with nothing new must end with the context's error")
	}
}

func TestLineRoundTrip(t *testing.T) {
	e := Event{Time: time.Unix(100, 0).UTC(), Kind: RemoteUnreachable, Message: "second PC pc2 did not answer within 5 s"}
	line := "2026-11-29 strata-vision-relay " + FormatLine(e)
	got, ok := ParseLine(line)
	if !ok || got.Kind != e.Kind || got.Message != e.Message || !got.Time.Equal(e.Time) {
		t.Fatalf("ParseLine = %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "hello", LinePrefix + "{", LinePrefix + `{"message":"x"}`} {
		if _, ok := ParseLine(bad); ok {
			t.Errorf("ParseLine(%q) accepted", bad)
		}
	}
}
