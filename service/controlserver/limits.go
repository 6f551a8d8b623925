package controlserver

// Bounds for callers that are neither the install's owner nor an
// administrator (issue 32): any local account may read the read token, and
// ~20,000 long-polls with it once exhausted the service's descriptors and
// memory (the owner's `status` then said "Service: not installed", and a
// Strata crash meanwhile could not read its config). Now:
//   - the service's descriptor limit is raised to what the OS allows
//     (RaiseFDLimit, at Serve);
//   - each connection's account is asked of the kernel at accept
//     (portowner.PeerUID): root, this process's account and the install's
//     owner are always accepted (their capacity is reserved); every other
//     account may hold ConnsPerCaller connections, and all of them together
//     Conns; one more is closed at once;
//   - a long-poll (GET /v1/events?wait=) by a non-operator waits at most
//     ReaderMaxWait (the operator's MaxWait is longer), and such waits are
//     bounded per account (WaitsPerCaller) and in total (Waits): one more
//     is answered 429 at once, and its connection closed.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/portowner"
)

// Limits bound what callers other than the owner and the administrators
// may hold at once.
type Limits struct {
	ReaderMaxWait  time.Duration // a non-operator's longest wait
	WaitsPerCaller int           // waiting long-polls per account
	Waits          int           // waiting long-polls of all such accounts
	ConnsPerCaller int           // open connections per account
	Conns          int           // open connections of all such accounts
}

// DefaultLimits leave a reader's tray (one wait at a time) far inside its
// bounds, and keep a flood's cost to a few MB and a few hundred descriptors.
var DefaultLimits = Limits{ReaderMaxWait: time.Minute, WaitsPerCaller: 16, Waits: 256, ConnsPerCaller: 128, Conns: 1024}

// limitsNow is s.Limits, DefaultLimits when unset.
func (s *Server) limitsNow() Limits {
	if s.Limits == (Limits{}) {
		return DefaultLimits
	}
	return s.Limits
}

// unknownCaller keys callers whose account the OS did not tell.
const unknownCaller = int64(-1)

// callerKey is the context key of a connection's caller.
type callerKey struct{}

// caller is who holds a connection.
type caller struct {
	id       int64 // uid, or unknownCaller
	reserved bool  // root, this process's account or the install's owner
}

// limiter counts what each caller holds.
type limiter struct {
	mu        sync.Mutex
	conns     map[int64]int
	connTotal int
	waits     map[int64]int
	waitTotal int
	ownerUID  int64 // -1: none
}

func (s *Server) lim() *limiter {
	s.limOnce.Do(func() {
		s.limits = &limiter{conns: map[int64]int{}, waits: map[int64]int{}, ownerUID: -1}
	})
	return s.limits
}

// setOwnerUID marks uid (the install's owner; -1: none) as reserved.
func (s *Server) setOwnerUID(uid int64) {
	l := s.lim()
	l.mu.Lock()
	l.ownerUID = uid
	l.mu.Unlock()
}

// who is the caller of a new connection.
func (s *Server) who(c net.Conn) caller {
	uid, ok := portowner.PeerUID(c.LocalAddr(), c.RemoteAddr())
	if !ok {
		return caller{id: unknownCaller}
	}
	l := s.lim()
	l.mu.Lock()
	owner := l.ownerUID
	l.mu.Unlock()
	id := int64(uid)
	return caller{id: id, reserved: uid == 0 || id == int64(os.Geteuid()) || id == owner}
}

// limitedListener closes a connection over its caller's bounds at once.
type limitedListener struct {
	net.Listener
	s *Server
}

type limitedConn struct {
	net.Conn
	who  caller
	once sync.Once
	l    *limiter
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.who.reserved || c.who.id == unknownCaller {
			return
		}
		c.l.mu.Lock()
		c.l.conns[c.who.id]--
		if c.l.conns[c.who.id] <= 0 {
			delete(c.l.conns, c.who.id)
		}
		c.l.connTotal--
		c.l.mu.Unlock()
	})
	return err
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		who := ll.s.who(c)
		l := ll.s.lim()
		// Callers the OS does not name (no sock_diag, another OS) are not
		// counted here: their long-polls still are (by role).
		if who.reserved || who.id == unknownCaller {
			return &limitedConn{Conn: c, who: who, l: l}, nil
		}
		lim := ll.s.limitsNow()
		l.mu.Lock()
		over := l.conns[who.id] >= lim.ConnsPerCaller || l.connTotal >= lim.Conns
		if !over {
			l.conns[who.id]++
			l.connTotal++
		}
		l.mu.Unlock()
		if over {
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, who: who, l: l}, nil
	}
}

// connContext puts the connection's caller into its requests' context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, callerKey{}, lc.who)
	}
	return ctx
}

// waitSlot takes a long-poll slot for r's caller; ok false when it is over
// its bounds (the caller was answered 429). Operators and reserved callers
// always get one. release gives it back.
func (s *Server) waitSlot(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	who, _ := r.Context().Value(callerKey{}).(caller)
	if RoleOf(r.Context()) == RoleOperator || who.reserved {
		return func() {}, true
	}
	if _, named := r.Context().Value(callerKey{}).(caller); !named {
		who.id = unknownCaller
	}
	l := s.lim()
	lim := s.limitsNow()
	l.mu.Lock()
	if l.waits[who.id] >= lim.WaitsPerCaller || l.waitTotal >= lim.Waits {
		l.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		w.Header().Set("Connection", "close")
		fail(w, http.StatusTooManyRequests, fmt.Sprintf("this account already waits for events %d times (at most %d at once, %d for all accounts together); ask again after the others have answered", l.waits[who.id], lim.WaitsPerCaller, lim.Waits))
		return nil, false
	}
	l.waits[who.id]++
	l.waitTotal++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.waits[who.id]--
		if l.waits[who.id] <= 0 {
			delete(l.waits, who.id)
		}
		l.waitTotal--
		l.mu.Unlock()
	}, true
}
