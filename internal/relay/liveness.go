package relay

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
)

// Telling a lost link from a hung agent, while a picture is in flight.
//
// Two things can fall silent: the agent (stopped, frozen: its sshd still
// answers) and the link (a cable pulled, the PC frozen or gone: nothing
// answers). Both hold text for as long as the relay waits, so both are
// given up within seconds (bounds.HungAgent, bounds.LinkLost), and the ERR
// says which one it was:
//   - what proves the link alive is anything from the second PC: a keepalive
//     answered by its sshd (every bounds.KeepalivePicture during a picture),
//     a frame from the agent, or the upload moving on (the ssh window only
//     opens when the peer says so);
//   - what proves the agent alive is its frames (a Beat every second while it
//     works) or the upload moving on.
// Nothing for bounds.LinkLost: the link is lost; the connection is closed at
// once, in the background (a dead TCP connection holds whatever writes to it,
// so nothing after the verdict may wait on it), the PC is known down until the
// background retry reaches it again. The agent silent for bounds.HungAgent
// while a keepalive was answered within bounds.LinkAnswers: the agent is hung;
// it is killed over the live link.
//
// The verdicts are the link's (link.judge); every bound they use is in
// internal/relay/bounds.

// linkCheck is what one connection's monitor learnt of its link.
type linkCheck struct {
	answered atomic.Int64  // UnixNano: the last keepalive answer (the connect at first)
	pending  atomic.Bool   // a keepalive is on its way
	kick     chan struct{} // wakes the monitor: a picture begins
}

func newLinkCheck() *linkCheck {
	lc := &linkCheck{kick: make(chan struct{}, 1)}
	lc.answered.Store(time.Now().UnixNano())
	return lc
}

// wake makes the monitor look now (and check the link at the picture's
// pace from then on).
func (lc *linkCheck) wake() {
	select {
	case lc.kick <- struct{}{}:
	default:
	}
}

func (lc *linkCheck) answeredAt() time.Time { return time.Unix(0, lc.answered.Load()) }

// verdict is what a picture's wait concludes of the silence.
type verdict int

const (
	waitOn    verdict = iota // something moves, or too early to tell
	agentHung                // the agent is silent, its link answers
	linkLost                 // nothing answers
)

// The phases of a picture on the second PC, as the relay sees them.
const (
	phaseUpload int32 = iota + 1
	phaseStarting
	phaseEncoding
	phaseDownload
)

// lostWords says when the link was lost.
var lostWords = map[int32]string{
	phaseUpload:   "while the picture was sent to it",
	phaseStarting: "while its encoder was starting",
	phaseEncoding: "while it was reading the picture",
	phaseDownload: "while the result came back",
}

// hungWords says what a hung agent was doing.
var hungWords = map[int32]string{
	phaseUpload:   "taking",
	phaseStarting: "starting the encoder for",
	phaseEncoding: "reading",
	phaseDownload: "sending the result of",
}

// judge looks at a picture's session and its link now: waitOn, or the
// verdict and how long the silent side has said nothing.
func (l *link) judge(s *agentSession, lc *linkCheck, now time.Time) (verdict, time.Duration) {
	agent := now.Sub(s.lastProgress())
	link := agent
	if lc != nil {
		link = min(link, now.Sub(lc.answeredAt()))
	}
	if link > l.cfg.linkLost {
		return linkLost, link
	}
	// Hung only while the link is seen answering: an agent silent because
	// its link was just cut is the link's verdict, a moment later.
	if s.info.BeatMS > 0 && agent > silenceBound(s) && lc != nil && now.Sub(lc.answeredAt()) < bounds.LinkAnswers {
		return agentHung, agent
	}
	return waitOn, 0
}

// silenceBound is how long an agent that sends Beat frames may say nothing
// while it has a picture: three of its beats, at least bounds.HungAgent.
func silenceBound(s *agentSession) time.Duration {
	return max(bounds.HungBeats*time.Duration(s.info.BeatMS)*time.Millisecond, bounds.HungAgent)
}

// watchSend judges the silence while a picture is written to the agent (a
// stopped agent stops reading: the write would wait on the full ssh window
// for ever; a lost link holds it in a full socket buffer) and ends the write:
// a hung agent's session is closed and the agent signalled, a lost link's
// connection closed (c). The returned func stops the watch and says what it
// concluded (waitOn: nothing) and after how long a silence.
func (l *link) watchSend(s *agentSession, lc *linkCheck, c remote.Conn) func() (verdict, time.Duration) {
	type found struct {
		v     verdict
		quiet time.Duration
	}
	stop, done := make(chan struct{}), make(chan found, 1)
	go func() {
		t := time.NewTicker(bounds.Check)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- found{}
				return
			case <-t.C:
				switch v, quiet := l.judge(s, lc, time.Now()); v {
				case linkLost:
					if c != nil {
						c.Close() // the write returns; nothing else is waited on
					}
					done <- found{v, quiet}
					return
				case agentHung:
					if s.proc.Kill != nil {
						s.proc.Kill() // its sshd ends the channel: the write returns
					}
					s.close()
					done <- found{v, quiet}
					return
				}
			}
		}
	}()
	return func() (verdict, time.Duration) { close(stop); f := <-done; return f.v, f.quiet }
}

// linkGone gives up the connection whose link was lost while a picture was
// in flight, without waiting on it: the connection and the agent session
// are closed in the background, the second PC is known down until the
// background retry reaches it again. It returns the picture's ERR line.
func (l *link) linkGone(s *agentSession, quiet time.Duration) string {
	host := l.host()
	reason := fmt.Sprintf("the link to second PC %s was lost %s (nothing came from it for %s, not even an answer to a keepalive)",
		host, lostWords[s.phase.Load()], quiet.Round(100*time.Millisecond))
	l.abandonLink()
	// Closing the socket ends the session's reader at once (local work, no
	// word from the peer): wait for it, bounded, so that a result cut off
	// in the download has had its temporary file removed before the ERR.
	select {
	case <-s.done:
	case <-time.After(bounds.StuckPicture):
	}
	l.out.emit(reason, events.RemoteDisconnectedDetails{RelayMark: relayMark, Host: host})
	l.out.logf("%s; closing the connection", reason)
	l.markDown(reason + unavailable)
	return "ERR " + reason + "; check that PC and its network" + unavailable
}

// abandonLink drops the current connection and agent session at once and
// closes them in the background: the connection first, since a dead TCP
// connection holds every write on it (the session's end included) until it
// is closed. Closing a socket does not wait on the peer.
func (l *link) abandonLink() {
	c := l.conn
	if c != nil {
		close(l.connStop)
		l.conn = nil
	}
	s := l.sess.Swap(nil)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if c != nil {
			c.Close()
		}
		if s != nil {
			s.close()
		}
	}()
}

// endHungAgent drops a hung agent's session at once and kills it in the
// background over c (its link answers: the kill is quick, but the picture's
// ERR need not wait for it); Close waits for it.
func (l *link) endHungAgent(s *agentSession) {
	c := l.conn
	l.sess.CompareAndSwap(s, nil)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.killAgent(s, c)
		s.close()
	}()
}

// progressWrite: a write to the agent at least this long is picture data
// and counts as the upload moving on; a ping, a SetIdle or a picture's begin
// and end are small and prove nothing (a ping written into a dead link's
// socket buffer succeeds).
const progressWrite = 512

// progressPiece: a long write is passed on in pieces of this size, so each
// piece the ssh window lets through counts as progress (a 256 KiB chunk at
// 1 Mbit/s takes 2 s).
const progressPiece = 32 << 10
