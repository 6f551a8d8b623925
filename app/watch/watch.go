// Package watch follows strata-service's control API for the tray: it reads
// the state, then long-polls the event stream from the state's sequence
// number, re-reading the state after each batch of events (the tray shows the
// service's state; it does not fold events into a copy of its own). It
// reconnects with backoff when the service is not there (not installed yet,
// restarting, stopped) and resumes where it left off.
package watch

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// Update is one thing the tray learns.
type Update struct {
	// State is the newest snapshot; nil when the service is not reachable.
	State *controlapi.State
	// Err says why State is nil.
	Err error
	// Events are the events that led to State (empty after a (re)connect or
	// a gap, when the state was read afresh).
	Events []events.Event
}

// Watcher follows the service. The zero value works with the defaults.
type Watcher struct {
	// Connect makes a client; it runs again at every reconnect because the
	// service writes a new address and token each time it starts.
	// Default: Connect.
	Connect func() (*controlapi.Client, error)
	// Wait is the long-poll duration (default 5 min: the service is on this
	// machine, so a poll that is answered only when something happens costs
	// the idle tray one request per Wait; a service that dies or restarts
	// closes the connection, which ends the poll at once).
	Wait time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnects
	// (default 500 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// Logf logs reconnects (default: nothing).
	Logf func(format string, args ...any)
}

// DefaultWait is the long-poll duration when Watcher.Wait is not set.
const DefaultWait = 5 * time.Minute

// Run follows the service until ctx ends, calling out for every update. out
// runs on Run's goroutine; a slow out delays the next poll, nothing more.
func (w *Watcher) Run(ctx context.Context, out func(Update)) error {
	connect := w.Connect
	if connect == nil {
		connect = Connect
	}
	wait := w.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	minB, maxB := w.MinBackoff, w.MaxBackoff
	if minB <= 0 {
		minB = 500 * time.Millisecond
	}
	if maxB < minB {
		maxB = 10 * time.Second
		if maxB < minB {
			maxB = minB
		}
	}
	logf := w.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}

	backoff := minB
	var lastErr string
	down := func(err error) {
		// Tell the tray once per distinct reason, not at every retry.
		if err.Error() != lastErr {
			lastErr = err.Error()
			logf("control API: %v", err)
			out(Update{Err: err})
		}
	}
	sleep := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff *= 2
		if backoff > maxB {
			backoff = maxB
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}

	for ctx.Err() == nil {
		c, err := connect()
		if err != nil {
			down(err)
			if !sleep() {
				break
			}
			continue
		}
		st, err := c.State(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			down(err)
			if !sleep() {
				break
			}
			continue
		}
		lastErr = ""
		backoff = minB
		out(Update{State: st})
		// follow returns only when the stream ended, always with its error.
		if err := w.follow(ctx, c, st.Seq, wait, out); ctx.Err() == nil {
			logf("control API: event stream ended: %v", err)
			// Re-read the state at once: a restarted service answers quickly,
			// and a gone one is reported by the next State call.
		}
	}
	return ctx.Err()
}

// follow long-polls events after since until an error. Each poll has its own
// deadline (wait plus a margin) so a connection that died silently (a laptop
// that slept) is noticed.
func (w *Watcher) follow(ctx context.Context, c *controlapi.Client, since uint64, wait time.Duration, out func(Update)) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, wait+15*time.Second)
		r, err := c.Events(pctx, since, wait)
		cancel()
		if err != nil {
			return err
		}
		if r.Gap {
			// Events were dropped: only the state is complete.
			st, err := c.State(ctx)
			if err != nil {
				return err
			}
			out(Update{State: st})
			since = maxSeq(st.Seq, r.Next)
			continue
		}
		if r.Next < since {
			// A new service instance numbers from 1 again.
			return errors.New("the service restarted (sequence numbers went back)")
		}
		if len(r.Events) == 0 {
			since = r.Next
			continue
		}
		st, err := c.State(ctx)
		if err != nil {
			return err
		}
		out(Update{State: st, Events: r.Events})
		since = r.Next
	}
}

func maxSeq(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// IsUnauthorized reports whether err is the service refusing our token.
func IsUnauthorized(err error) bool {
	var se *controlapi.StatusError
	return errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden)
}
