package relay

import (
	"context"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/relay/remote"
)

// Reaching the second PC: whether it is known down (and why), the
// background retry that dials it every bounds.Retry while it is, the
// connection that retry made for the next picture, and the outage's
// fallback noted once. The state is linkState's (its one mutex); the retry
// loop is the link's, which dials.

// markDown records that the second PC cannot be reached: pictures are
// answered at once (fallback or ERR) until the background retry reaches it.
func (l *link) markDown(why string) {
	l.reach.markDown(why)
	l.ensureRetry(false)
}

// retry dials the second PC every RetryEvery (or when kicked) until it
// answers; the connection is kept for the next picture.
func (l *link) retry(stop, kick chan struct{}, now bool, first chan struct{}) {
	defer l.wg.Done()
	done := func() {
		if first != nil {
			close(first)
			first = nil
		}
	}
	defer done()
	for {
		if !now {
			select {
			case <-stop:
				return
			case <-time.After(l.cfg.retryEvery):
			case <-kick:
			}
		}
		now = false
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		t0 := time.Now()
		c, err := l.dial(ctx)
		cancel()
		if err != nil {
			select {
			case <-stop:
				return
			default:
			}
			if time.Since(t0) < l.cfg.slowFailure && !l.reach.wakeOnNow() {
				l.reach.quickFailure(stop)
				return
			}
			l.reach.markDown(err.Error())
			done()
			continue
		}
		l.reach.up(c, stop) // dial reported it reachable again
		return
	}
}

// ensureRetry starts the background retry unless it runs (now: try at once).
func (l *link) ensureRetry(now bool) {
	stop, kick, first, ok := l.reach.startRetry(now)
	if !ok {
		return
	}
	l.wg.Add(1)
	go l.retry(stop, kick, now, first)
}

// linkState is what the relay knows about reaching the second PC.
type linkState struct {
	mu       sync.Mutex
	reach    int // 1 up, -1 unreachable, 0 unknown: events on transitions only
	down     bool
	why      string
	epoch    int
	fellBack bool
	spare    remote.Conn
	stop     chan struct{} // the retry loop's, nil when none runs
	kick     chan struct{}
	first    chan struct{} // closed when the retry's immediate first dial ended
	wakeOn   bool          // Wake-on-LAN is set up: any failure may be a PC asleep
}

func (l *linkState) setWakeOn(v bool) {
	l.mu.Lock()
	l.wakeOn = v
	l.mu.Unlock()
}

func (l *linkState) wakeOnNow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wakeOn
}

// firstDial is the channel of an immediate first dial in progress, or nil.
func (l *linkState) firstDial() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == nil {
		return nil
	}
	select {
	case <-l.first:
		l.first = nil
		return nil
	default:
		return l.first
	}
}

// setReachable records a dial's outcome and returns the one before.
func (l *linkState) setReachable(v int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.reach
	l.reach = v
	return prev
}

// clearFallback: the next outage's first fallback is reported again.
func (l *linkState) clearFallback() {
	l.mu.Lock()
	l.fellBack = false
	l.mu.Unlock()
}

// quickFailure ends a background retry whose dial failed quickly (the PC
// answers, refusing): not known down any more; the next picture dials.
func (l *linkState) quickFailure(stop chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == stop {
		l.stop, l.kick = nil, nil
		l.down, l.why = false, ""
	}
}

func (l *linkState) markDown(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.down {
		l.epoch++
	}
	l.down, l.why = true, why
}

func (l *linkState) isDown() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down, l.why
}

func (l *linkState) epochNow() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// noteFallback is true for the first fallback of an outage.
func (l *linkState) noteFallback() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := !l.fellBack
	l.fellBack = true
	return first
}

// up keeps c for the next picture and ends the outage; true when the PC
// was known down.
func (l *linkState) up(c remote.Conn, stop chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != stop { // the retry was stopped meanwhile
		c.Close()
		return false
	}
	if l.spare != nil {
		l.spare.Close()
	}
	l.spare = c
	wasDown := l.down
	l.down, l.why, l.fellBack = false, "", false
	l.stop, l.kick = nil, nil
	return wasDown
}

func (l *linkState) takeSpare() remote.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.spare
	l.spare = nil
	if c != nil {
		select {
		case <-c.Done():
			return nil
		default:
		}
	}
	return c
}

// startRetry makes the retry's channels unless it runs (now: try at once,
// with first closed when that dial ended): ok says it must be started.
func (l *linkState) startRetry(now bool) (stop, kick, first chan struct{}, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		return nil, nil, nil, false
	}
	l.stop, l.kick = make(chan struct{}), make(chan struct{}, 1)
	if now {
		first = make(chan struct{})
		l.first = first
	}
	return l.stop, l.kick, first, true
}

func (l *linkState) kickRetry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kick != nil {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *linkState) stopRetry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		l.stop, l.kick = nil, nil
	}
	if l.spare != nil {
		l.spare.Close()
		l.spare = nil
	}
}

// reset forgets everything about the old second PC.
func (l *linkState) reset() {
	l.stopRetry()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reach, l.down, l.why, l.fellBack = 0, false, "", false
}
