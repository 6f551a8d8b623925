package relay

import (
	"context"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing/bounds"
)

// ServiceReporter sends the relay's events and the n_embd it learned to the
// companion's service (POST /v1/relay), asynchronously and best effort: a
// report never delays a reply to Strata, a service that is not running
// costs nothing but the dropped events, and nothing reaches Strata's engine
// log. The service's address and the relay's own token (it may report
// only the relay's events) are found as every client finds them
// (controlapi.NewRelayClient), again after each failure, so a service that
// starts after Strata is found.
type ServiceReporter struct {
	find func() (*controlapi.Client, error)
	// firstRetry is the first pause after a failed attempt (2 s; tests
	// make it long to see that a new event does not wait for it).
	firstRetry time.Duration

	mu      sync.Mutex
	queue   []events.Event
	nEmbd   int
	dropped int
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	sent    int
}

// maxQueued bounds the events kept while the service cannot be reached.
const maxQueued = 256

// ReportFlush is how long the relay gives its last events at exit
// (ServiceReporter.Close): bounds.ReportFlush.
const ReportFlush = bounds.ReportFlush

// NewServiceReporter starts the sender; find nil means
// controlapi.NewRelayClient (the relay's own token).
func NewServiceReporter(find func() (*controlapi.Client, error)) *ServiceReporter {
	if find == nil {
		find = controlapi.NewRelayClient
	}
	return startReporter(&ServiceReporter{find: find, firstRetry: bounds.ReportRetry})
}

func startReporter(s *ServiceReporter) *ServiceReporter {
	s.wake, s.stop, s.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go s.loop()
	return s
}

// Event queues e (the oldest is dropped when the queue is full).
func (s *ServiceReporter) Event(e events.Event) {
	s.mu.Lock()
	if len(s.queue) >= maxQueued {
		s.queue = s.queue[1:]
		s.dropped++
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	s.poke()
}

// NEmbd queues the n_embd the second PC's encoder reported.
func (s *ServiceReporter) NEmbd(n int) {
	s.mu.Lock()
	s.nEmbd = n
	s.mu.Unlock()
	s.poke()
}

func (s *ServiceReporter) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close sends what is queued, waiting at most wait, and stops the sender.
func (s *ServiceReporter) Close(wait time.Duration) {
	close(s.stop)
	select {
	case <-s.done:
	case <-time.After(wait):
	}
}

// putBack returns a report that could not be sent, ahead of newer events.
func (s *ServiceReporter) putBack(r controlapi.RelayReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(r.Events, s.queue...)
	if n := len(s.queue) - maxQueued; n > 0 {
		s.queue = s.queue[n:]
		s.dropped += n
	}
	if s.nEmbd == 0 {
		s.nEmbd = r.NEmbd
	}
}

func (s *ServiceReporter) loop() {
	defer close(s.done)
	var c *controlapi.Client
	// A service that is not running is asked again after 2 s, then 4, 8,
	// ... up to a minute (an idle relay without a service should not wake
	// every 2 s for ever); a new event asks at once.
	retry := s.firstRetry
	for {
		stopping := false
		select {
		case <-s.wake:
		case <-s.stop:
			stopping = true
		}
		for {
			r, ok := func() (controlapi.RelayReport, bool) {
				s.mu.Lock()
				defer s.mu.Unlock()
				r := controlapi.RelayReport{Events: s.queue, NEmbd: s.nEmbd}
				s.queue, s.nEmbd = nil, 0
				return r, len(r.Events) > 0 || r.NEmbd > 0
			}()
			if !ok {
				break
			}
			if c == nil {
				var err error
				if c, err = s.find(); err != nil {
					c = nil
				}
			}
			var err error = controlapi.ErrNotRunning
			if c != nil {
				ctx, cancel := context.WithTimeout(context.Background(), bounds.ReportSend)
				err = c.ReportRelay(ctx, r)
				cancel()
			}
			if err == nil {
				s.mu.Lock()
				s.sent += len(r.Events)
				s.mu.Unlock()
				retry = s.firstRetry
				continue
			}
			c = nil
			s.putBack(r)
			if stopping {
				return
			}
			// Try again after a pause, or when new events come.
			select {
			case <-time.After(retry):
				retry = min(2*retry, bounds.ReportRetryMax)
			case <-s.wake:
			case <-s.stop:
				stopping = true
			}
		}
		if stopping {
			return
		}
	}
}
