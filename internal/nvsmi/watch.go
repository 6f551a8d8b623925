package nvsmi

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Reading is one look at the GPUs.
type Reading struct {
	GPUs []GPU
	// Err is why no GPU was read (nil when some were).
	Err *Error
	// At is when the reading began (zero: never).
	At time.Time
}

// Watcher reads the GPUs for a loop that must not stall: one read runs at a
// time, off the caller's goroutine, and Read waits for it only up to a
// bound, then answers with the last reading. A hung nvidia-smi therefore
// costs a caller at most that bound, and never starts a second one.
type Watcher struct {
	override string
	timeout  time.Duration

	mu        sync.Mutex
	last      Reading
	running   chan struct{} // closed when the read in flight ends; nil when none
	runningAt time.Time     // when it began
	mig       map[int]string
}

// NewWatcher reads through the nvidia-smi that Candidates(override, nil,
// nil) finds first, each run bounded by timeout (0: DefaultTimeout). MIG
// modes are asked once (they change only with a GPU reset) and kept.
func NewWatcher(override string, timeout time.Duration) *Watcher {
	return &Watcher{override: override, timeout: timeout}
}

// Read returns a reading begun at or after since (the zero time: any
// fresh one), waiting for it up to wait: it joins the read in flight when
// that began late enough, and otherwise starts one (after the one in
// flight ends: never two at once). fresh says such a reading came within
// wait; otherwise r is the last reading taken (its At says when; a zero At
// with a Timeout error: none yet).
func (w *Watcher) Read(since time.Time, wait time.Duration) (r Reading, fresh bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		w.mu.Lock()
		if w.running == nil {
			w.running, w.runningAt = make(chan struct{}), time.Now()
			go w.refresh(w.running, w.runningAt)
		}
		ch, at := w.running, w.runningAt
		w.mu.Unlock()
		stuck := make(<-chan time.Time)
		if hung := time.Since(at); hung >= wait {
			// Already late by more than this reader would wait: a stuck
			// driver costs each caller nothing more.
			stuck = time.After(0)
		}
		select {
		case <-ch:
		case <-stuck:
			return w.stale(wait)
		case <-t.C:
			return w.stale(wait)
		}
		if !at.Before(since) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.last, true
		}
	}
}

// stale is the last reading, for a reader that could not wait for a fresh one.
func (w *Watcher) stale(wait time.Duration) (Reading, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.last
	if r.At.IsZero() {
		r.Err = &Error{Kind: Timeout, Detail: "no answer after " + wait.String()}
	}
	return r, false
}

// Last is the last reading taken, without starting one.
func (w *Watcher) Last() Reading {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *Watcher) refresh(done chan struct{}, at time.Time) {
	r := Reading{At: at}
	cands := Candidates(w.override, nil, nil)
	if len(cands) == 0 {
		where := "looked on PATH and in " + strings.Join(DefaultPaths(), ", ")
		if w.override != "" {
			where = "looked for " + w.override
		}
		r.Err = &Error{Kind: NotFound, Where: where}
	} else {
		w.mu.Lock()
		askMIG := w.mig == nil
		w.mu.Unlock()
		run := Local(cands[0], w.timeout)
		res := Query(context.Background(), run, cands[0], askMIG)
		r.GPUs, r.Err = res.GPUs, res.Err
		w.mu.Lock()
		if askMIG && res.Err == nil {
			w.mig = map[int]string{}
			for _, g := range res.GPUs {
				w.mig[g.Index] = g.MIG
			}
		}
		for i := range r.GPUs {
			r.GPUs[i].MIG = w.mig[r.GPUs[i].Index]
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.last = r
	w.running = nil
	w.mu.Unlock()
	close(done)
}
