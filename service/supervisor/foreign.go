package supervisor

import (
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/portowner"
)

// Never "ready" while another account answers on Strata's port too (a
// program on [::1] beside Strata's 127.0.0.1, say, during a restart):
// clients would send it the api_key. Both ways a server is found ready
// (its ready line, the health poll) ask foreignNow first; the event names
// the other account and its program once per run.

// foreignEvery is how often a port another account holds is looked at
// again before the server is reported ready.
var foreignEvery = time.Second

// foreignListener is a listener on p's port of another account than the
// one the server runs as (nil: none, or the OS does not say). Root's
// listeners are the administrators' and not counted.
func foreignListener(p *process) *portowner.Owner {
	other := false
	for _, uid := range portowner.ListenerUIDs(p.port) {
		other = other || uid >= 0 && uid != p.uid && uid != 0
	}
	if !other {
		return nil // the cheap look (no process scan) found none
	}
	for _, o := range portowner.Listeners(p.port) {
		if o.UID >= 0 && o.UID != p.uid && o.UID != 0 {
			return &o
		}
	}
	return nil
}

// foreignNow reports whether another account listens on p's port now,
// publishing who (once per run) when it does.
func (s *Supervisor) foreignNow(p *process) bool {
	o := foreignListener(p)
	if o == nil {
		return false
	}
	p.mu.Lock()
	said := p.foreignSaid
	p.foreignSaid = true
	p.mu.Unlock()
	if !said {
		what := o.Account() + "'s program"
		if o.PID > 0 {
			what += fmt.Sprintf(" (process %d: %s)", o.PID, o.Cmdline)
		}
		s.pub(fmt.Sprintf("port %d is held by another account too: %s. Strata is not reported ready (clients would send it the api_key) until it is gone: end it, or set another port", p.port, what),
			events.ServerForeignDetails{Port: p.port, PID: o.PID, Cmdline: o.Cmdline, UID: o.UID, Account: o.User})
	}
	return true
}

// portIsOurs waits while another account listens on p's port; false when
// p ended meanwhile.
func (s *Supervisor) portIsOurs(p *process) bool {
	for s.foreignNow(p) {
		select {
		case <-p.exited:
			return false
		case <-time.After(foreignEvery):
		}
	}
	return true
}
