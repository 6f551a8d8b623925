package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/sshx"
)

// link is the relay's link to the second PC: which PC (its target), the one
// kept ssh connection and the monitor that keeps it alive (keepalives, the
// agent's pings, the idle-link verdict), the agent session on it
// (session.go), the verdicts on a silence during a picture (liveness.go),
// and the outage with its background retry (reach.go). Every bound it
// keeps is from internal/relay/bounds (through linkConfig).
//
// The connection and the check of its link (conn, connStop, connDead,
// check) and the agent's command-line settings are the picture's: touched
// only by the goroutine reading the current picture (one at a time; Run
// waits for it), they need no lock. What the background goroutines (the
// monitor, the retry, the session's readers) and Run's QUIT also read is
// atomic: the target, the session, the connection to abort. The outage has
// its own lock (linkState). link itself has none.
type link struct {
	cfg   linkConfig
	out   *output
	reach linkState      // the outage and the background retry
	wg    sync.WaitGroup // every goroutine the link starts

	target    atomic.Pointer[linkTarget]
	sess      atomic.Pointer[agentSession]
	inUse     atomic.Pointer[connRef] // the connection in use, for abort
	inPicture atomic.Bool             // a picture is on the second PC: its link is checked often

	// The picture's (one at a time; see above).
	conn      remote.Conn
	connStop  chan struct{} // closed to stop the conn's monitor
	connDead  chan string   // the monitor's reason when it closed the conn
	check     *linkCheck    // what the conn's monitor learns of its link
	targetOS  string        // Target.OS of the second PC in use
	idleStopS int           // what the current session's agent was told
	cmdIdleS  int           // the idle stop in the agent's command line
}

// linkConfig are the link's bounds (Options, defaults from bounds).
type linkConfig struct {
	connect     time.Duration // Options.ConnectTimeout: bounds.Connect, bounds.IdleLinkLost
	hello       time.Duration // Options.HelloTimeout: bounds.AgentStart
	linkLost    time.Duration // Options.LinkLost: bounds.LinkLost
	retryEvery  time.Duration // Options.RetryEvery: bounds.Retry
	slowFailure time.Duration // Options.SlowFailure: bounds.SlowFailure
}

// linkTarget is the second PC the link dials: replaced whole when the
// settings name another (use), read by the monitor and the retry.
type linkTarget struct {
	host         string
	dial         remote.Dialer
	agentCommand string
}

type connRef struct{ c remote.Conn }

func newLink(cfg linkConfig, t linkTarget, out *output) *link {
	l := &link{cfg: cfg, out: out}
	l.target.Store(&t)
	return l
}

// host names the second PC in messages.
func (l *link) host() string { return l.target.Load().host }

// use points the link at the second PC t, whose agent is told idleStopS.
func (l *link) use(t Target, idleStopS int) {
	l.target.Store(&linkTarget{host: t.Host, dial: t.Dial, agentCommand: t.AgentCommand})
	l.idleStopS, l.cmdIdleS, l.targetOS = idleStopS, t.IdleStopS, t.OS
}

// setIdle tells the running agent a changed idle stop.
func (l *link) setIdle(idleStopS int) {
	if idleStopS == l.idleStopS {
		return
	}
	l.idleStopS = idleStopS
	if s := l.currentSession(); s != nil {
		s.fw.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: idleStopS})
	}
}

// forget closes the session and the connection to the old second PC and
// forgets its outage (the settings name another).
func (l *link) forget() {
	l.dropSession()
	l.closeConn()
	l.reach.reset()
}

// beginPicture: a picture goes to the second PC now. From here its link is
// checked every bounds.KeepalivePicture and a silence is judged every
// bounds.Check (liveness.go), until endPicture. It returns the check of the
// connection in use and that connection.
func (l *link) beginPicture() (*linkCheck, remote.Conn) {
	l.inPicture.Store(true)
	if l.check != nil {
		l.check.wake()
	}
	return l.check, l.conn
}

func (l *link) endPicture() { l.inPicture.Store(false) }

// connect makes sure a live connection exists.
func (l *link) connect(ctx context.Context) error {
	if l.conn != nil {
		select {
		case <-l.conn.Done():
			l.closeConn()
		default:
			return nil
		}
	}
	c := l.reach.takeSpare() // made by the background retry
	if c == nil {
		var err error
		t0 := time.Now()
		c, err = l.dial(ctx)
		if err != nil {
			// Only a failure that takes long to find (no answer) is kept
			// as known down, re-checked in the background: one that is
			// quick (refused, reset, no route: about a millisecond on a
			// LAN) is simply tried again by the next picture, so a PC
			// whose ssh server is back is used at once. With Wake-on-LAN
			// on, any failure may be a PC asleep: known down, to wake it.
			if time.Since(t0) >= l.cfg.slowFailure || l.reach.wakeOnNow() {
				l.markDown(err.Error())
			}
			return err
		}
	}
	l.conn, l.connStop, l.connDead, l.check = c, make(chan struct{}), make(chan string, 1), newLinkCheck()
	l.inUse.Store(&connRef{c})
	l.wg.Add(1)
	go l.monitor(c, l.check, l.connStop, l.connDead)
	return nil
}

// dialError is a dial that failed: the second PC could not be reached (it
// may be asleep: the router may wake it).
type dialError struct{ msg string }

func (e *dialError) Error() string { return e.msg }

// dial opens a connection to the second PC and reports it: the time to
// connect (TCP and the ssh handshake) and, separately, the round trip
// measured by one keepalive on the open connection. A failure is reported
// on the transition to unreachable only.
func (l *link) dial(ctx context.Context) (remote.Conn, error) {
	t := l.target.Load()
	dial, host := t.dial, t.host
	t0 := time.Now()
	c, err := dial(ctx, l.cfg.connect)
	if err != nil {
		msg := l.dialMessage(err)
		l.out.logf("%s", msg)
		if l.reach.setReachable(-1) != -1 {
			l.out.emit(msg, events.RemoteUnreachableDetails{RelayMark: relayMark, Host: host, Reason: string(sshx.Classify(err))})
		}
		return nil, &dialError{msg}
	}
	handshake := time.Since(t0)
	if l.reach.setReachable(1) == -1 {
		l.reach.clearFallback()
		l.out.emit("second PC "+host+" answers again; pictures go there", events.RemoteReachableDetails{RelayMark: relayMark, Host: host})
	}
	rtt := time.Duration(-1)
	actx, cancel := context.WithTimeout(ctx, l.cfg.connect)
	// The first request on a new connection pays for setting up its
	// channels' windows on some servers: measure the second.
	if c.Alive(actx) == nil {
		t1 := time.Now()
		if c.Alive(actx) == nil {
			rtt = time.Since(t1)
		}
	}
	cancel()
	l.out.emit("", events.RemoteConnectedDetails{RelayMark: relayMark, Host: host, RTTms: float64(rtt.Microseconds()) / 1000, ConnectMS: handshake.Milliseconds()})
	l.out.logf("connected to second PC %s (connect and ssh handshake %d ms, round trip %.2f ms)", host, handshake.Milliseconds(), float64(rtt.Microseconds())/1000)
	return c, nil
}

func (l *link) dialMessage(err error) string {
	var de *sshx.DialError
	prefix := "second PC " + l.host()
	if !errors.As(err, &de) {
		return err.Error() + unavailable
	}
	switch sshx.Classify(err) {
	case sshx.ReasonTimedOut:
		return fmt.Sprintf("%s did not answer within %s%s", prefix, l.cfg.connect.Round(time.Second), unavailable)
	case sshx.ReasonRefused:
		return fmt.Sprintf("%s refused the connection (is it starting up, or its ssh server stopped?)%s", prefix, unavailable)
	case sshx.ReasonAuthFailed:
		return fmt.Sprintf("%s refused the companion's key; pair it again (strata-service remote pair)%s", prefix, unavailable)
	case sshx.ReasonHostKeyChanged, sshx.ReasonHostKeyUnknown:
		return fmt.Sprintf("%s presented another host key than the one paired: if it was reinstalled, pair it again (strata-service remote pair); otherwise something is impersonating it%s", prefix, unavailable)
	}
	if strings.Contains(err.Error(), "host key mismatch") {
		return fmt.Sprintf("%s presented another host key than the one paired: if it was reinstalled, pair it again (strata-service remote pair); otherwise something is impersonating it%s", prefix, unavailable)
	}
	return prefix + ": " + de.Error() + unavailable
}

// monitor checks the connection: a keepalive every bounds.KeepaliveIdle
// between pictures and every bounds.KeepalivePicture while one is in flight
// (answers are recorded in lc, which a picture's wait judges: liveness.go),
// never more than one on its way, and a ping to the agent every bounds.Ping.
// Between pictures, nothing from the second PC for ConnectTimeout
// (bounds.IdleLinkLost) closes the connection, which ends any wait on it: a
// PC that vanished without a word is noticed within that, plus one check.
func (l *link) monitor(c remote.Conn, lc *linkCheck, stop chan struct{}, dead chan string) {
	defer l.wg.Done()
	// It wakes every bounds.Check during a picture, every
	// bounds.KeepaliveIdle between pictures (an idle relay wakes seldom),
	// and at once when a picture begins (lc.kick).
	tick := time.NewTimer(0)
	defer tick.Stop()
	// Close does not wait out a keepalive on a dead link.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lastPing, lastSent := time.Now(), time.Time{}
	for {
		select {
		case <-stop:
			return
		case <-c.Done():
			select {
			case <-stop:
				return // closed by us
			default:
			}
			dead <- "the connection to second PC " + l.host() + " closed"
			l.out.emit("the connection to second PC "+l.host()+" closed", events.RemoteDisconnectedDetails{RelayMark: relayMark, Host: l.host()})
			l.out.logf("the connection to second PC %s closed", l.host())
			return
		case <-tick.C:
		case <-lc.kick:
		}
		now := time.Now()
		every, wake := bounds.KeepaliveIdle, bounds.KeepaliveIdle
		if l.inPicture.Load() {
			every, wake = bounds.KeepalivePicture, bounds.Check
		}
		tick.Reset(wake)
		// Half a check early counts as due: a timer that fires a moment
		// before the interval must not skip a whole one.
		if now.Sub(lastSent) >= every-bounds.Check/2 && lc.pending.CompareAndSwap(false, true) {
			lastSent = now
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				if c.Alive(ctx) == nil {
					lc.answered.Store(time.Now().UnixNano())
				}
				lc.pending.Store(false)
			}()
		}
		if !l.inPicture.Load() {
			heard := lc.answeredAt()
			if s := l.currentSession(); s != nil && s.lastProgress().After(heard) {
				heard = s.lastProgress()
			}
			if now.Sub(heard) > l.cfg.connect {
				reason := fmt.Sprintf("second PC %s did not answer within %s", l.host(), l.cfg.connect.Round(time.Second))
				dead <- reason
				c.Close()
				l.out.emit(reason, events.RemoteDisconnectedDetails{RelayMark: relayMark, Host: l.host()})
				l.out.logf("%s; closing the connection", reason)
				// It vanished: known down until the background retry
				// reaches it again, so pictures are answered at once.
				l.markDown(reason + unavailable)
				return
			}
		}
		if now.Sub(lastPing) >= bounds.Ping-bounds.Check/2 {
			if s := l.currentSession(); s != nil {
				s.fw.Write(framing.Ping)
			}
			lastPing = now
		}
	}
}

// abort closes the connection in use from another goroutine than the
// picture's (Run, on QUIT): whatever waits on it returns.
func (l *link) abort() {
	if r := l.inUse.Load(); r != nil {
		r.c.Close()
	}
}

func (l *link) closeConn() {
	if l.conn == nil {
		return
	}
	close(l.connStop)
	l.conn.Close()
	l.conn = nil
}

// close ends the agent session (the agent stops its encoder and removes its
// scratch folder when its input ends), then the connection and the
// background retry. Bounded whatever the link does: a dead connection
// (black-holed, its PC gone without a word) is closed, not waited on.
// Strata waits on its encoder's exit, and text with it.
func (l *link) close() {
	if s := l.currentSession(); s != nil {
		s.proc.Stdin.Close()
		select {
		case <-s.done:
		case <-time.After(bounds.AgentEnd):
			killed := make(chan struct{})
			l.wg.Add(1)
			c := l.conn
			go func() { defer l.wg.Done(); l.killAgent(s, c); close(killed) }()
			select {
			case <-killed:
			case <-time.After(bounds.KillWait):
				// The link does not answer: closing it below ends the wait.
			}
		}
	}
	l.dropSession()
	l.closeConn()
	l.reach.stopRetry()
}

// wait waits for every goroutine the link started (after close).
func (l *link) wait() { l.wg.Wait() }
