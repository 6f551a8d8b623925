package events

import (
	"context"
	"errors"
	"sync/atomic"
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

// A Wait that found nothing and is about to block is woken by a publish
// made from inside the wait (the blocking hook): the window between
// Wait's check and its select loses no wake-up. The hook running proves the
// waiter did block (the event was not already there when it looked).
func TestWaitWakesOnPublishFromInsideTheWait(t *testing.T) {
	b := NewBus(10)
	var blocked atomic.Int32
	b.SetBlockingHook(func() {
		if blocked.Add(1) == 1 {
			b.Publish(Event{Kind: ServerReady})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs, _, err := b.Wait(ctx, 0)
	if err != nil || len(evs) != 1 || evs[0].Kind != ServerReady {
		t.Fatalf("Wait = %+v, %v (blocked %d times)", evs, err, blocked.Load())
	}
	if n := blocked.Load(); n != 1 {
		t.Fatalf("the waiter blocked %d times, want once (then woken by the publish)", n)
	}
}

// A waiter known to be blocked (the hook told) is woken by a publish from
// another goroutine.
func TestWaitWakesOnPublishWhileBlocked(t *testing.T) {
	b := NewBus(10)
	isBlocked := make(chan struct{}, 1)
	b.SetBlockingHook(func() {
		select {
		case isBlocked <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan []Event, 1)
	go func() {
		evs, _, _ := b.Wait(ctx, 0)
		done <- evs
	}()
	select {
	case <-isBlocked:
	case <-ctx.Done():
		t.Fatal("Wait never blocked")
	}
	b.Publish(Event{Kind: ServerStarting})
	select {
	case evs := <-done:
		if len(evs) != 1 || evs[0].Kind != ServerStarting {
			t.Fatalf("got %+v", evs)
		}
	case <-ctx.Done():
		t.Fatal("a blocked Wait was not woken by Publish")
	}
}

// A blocked Wait ends with its context's error when the context ends.
func TestWaitHonoursContext(t *testing.T) {
	b := NewBus(10)
	b.Publish(Event{Kind: ServerReady})
	ctx, cancel := context.WithCancel(context.Background())
	b.SetBlockingHook(cancel) // the context ends while the waiter blocks
	evs, _, err := b.Wait(ctx, 1)
	if !errors.Is(err, context.Canceled) || len(evs) != 0 {
		t.Fatalf("Wait with nothing new = %+v, %v; want the context's error", evs, err)
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
