package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
)

// The agent session on the link: one running agent on the second PC, its
// frames read by two goroutines of its own (readFrames, readStderr); the
// link holds the current one (link.sess) and ends it.

// session returns the live agent session, connecting and starting the agent
// when needed.
func (l *link) session(ctx context.Context) (*agentSession, error) {
	if s := l.currentSession(); s != nil && !s.ended() {
		return s, nil
	}
	l.dropSession()
	for attempt := 0; ; attempt++ {
		if err := l.connect(ctx); err != nil {
			return nil, err
		}
		proc, err := l.conn.Start(l.target.Load().agentCommand)
		if err != nil {
			// The kept connection died since its last check: one fresh dial.
			l.closeConn()
			if attempt == 0 {
				continue
			}
			return nil, fmt.Errorf("second PC %s accepted the connection but not the agent session (%v)%s", l.host(), err, unavailable)
		}
		s := l.startSession(proc)
		select {
		case <-s.hello:
			if l.targetOS != "" && s.info.OS != "" && (l.targetOS == "windows") != (s.info.OS == "windows") {
				// Its command line was quoted for another shell: whatever
				// the settings say, the agent's own hello decides.
				s.close()
				return nil, fmt.Errorf("the second PC %s runs %s, but the companion settings say %s; run `strata-service remote prepare` again%s", l.host(), s.info.OS, l.targetOS, unavailable)
			}
			l.sess.Store(s)
			if l.idleStopS != l.cmdIdleS { // changed since the command was built
				s.fw.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: l.idleStopS})
			}
			if s.info.Proto != framing.Version {
				l.out.logf("the agent on %s speaks protocol %d, this relay %d; pair the second PC again to update it (strata-service remote pair, or the setup's Pair: its key runs only the agent it was paired with)", l.host(), s.info.Proto, framing.Version)
			}
			l.out.noteNEmbd(s.info.NEmbd)
			return s, nil
		case <-s.done:
			s.close()
			why := s.stderrTail()
			if why == "" {
				why = "it ended at once"
			}
			return nil, fmt.Errorf("the agent on second PC %s did not start (%s); run `strata-service remote prepare`%s", l.host(), why, unavailable)
		case <-time.After(l.cfg.hello):
			s.close()
			return nil, fmt.Errorf("the agent on second PC %s did not answer within %s%s", l.host(), l.cfg.hello, unavailable)
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		}
	}
}

func (l *link) currentSession() *agentSession { return l.sess.Load() }

func (l *link) dropSession() {
	if s := l.sess.Swap(nil); s != nil {
		s.close()
	}
}

// lostReason says why a session ended mid-picture.
func (l *link) lostReason(s *agentSession, err error) string {
	// Wait briefly for the connection's verdict, so the message names the
	// real cause (the PC vs. the agent).
	select {
	case why := <-l.connDead:
		l.connDead <- why
		l.dropSession()
		return why + " while reading a picture" + unavailable
	case <-time.After(bounds.LostVerdict):
	}
	tail := s.stderrTail()
	l.dropSession()
	msg := "the agent on second PC " + l.host() + " stopped while reading the picture"
	if tail != "" {
		msg += " (" + tail + ")"
	} else if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return msg + "; the next picture starts it again"
}

// killAgent ends an agent that does not end by itself (hung, or stopped:
// it cannot read its input's end): a signal through the session where the
// second PC's sshd allows it, else a kill of the pid it announced, run in a
// session of its own, over the connection c. Its encoder dies with it (a
// parent-death signal on Linux, a Job Object on Windows).
func (l *link) killAgent(s *agentSession, c remote.Conn) {
	if s.proc.Kill != nil {
		s.proc.Kill() // refused for some accounts (sshd: "requires privilege separation")
	}
	select {
	case <-s.done:
		return
	case <-time.After(bounds.KillSignal):
	}
	if c == nil || s.info.PID <= 0 {
		return
	}
	cmd, err := agentcmd.Command{Verb: agentcmd.VerbKill, PID: s.info.PID}.Quote(s.info.OS)
	if err != nil {
		return
	}
	p, err := c.Start(cmd)
	if err != nil {
		l.out.logf("could not end the hung agent on %s: %v", l.host(), err)
		return
	}
	p.Stdin.Close()
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, p.Stdout); close(ended) }()
	select {
	case <-ended:
	case <-time.After(bounds.KillCommand):
	}
	p.Close()
	select {
	case <-s.done:
	case <-time.After(bounds.KillWait):
	}
}

type frame struct {
	t framing.Type
	p []byte
	// A Result's parts: the .sve went straight to tmp (beside the
	// requested output) as it arrived, with no 10 MB buffer in between.
	id     uint32
	line   string
	tmp    string
	tmpErr error
}

// receiveResult reads a Result frame of n bytes, writing the .sve into a
// temporary file beside the pending request's output. A stream error (the
// connection broke mid-result) is returned; a file error is kept in the
// frame and the bytes are drained, so the session stays usable.
func (s *agentSession) receiveResult(fr *framing.Reader, n int) (frame, error) {
	body := fr.Body(n)
	var hd [6]byte
	if n < len(hd) {
		return frame{}, errors.New("short result frame")
	}
	if _, err := io.ReadFull(body, hd[:]); err != nil {
		return frame{}, err
	}
	id, _, _ := framing.SplitID(hd[:4])
	ll := int(hd[4])<<8 | int(hd[5])
	if ll > n-6 {
		return frame{}, errors.New("result line longer than its frame")
	}
	line := make([]byte, ll)
	if _, err := io.ReadFull(body, line); err != nil {
		return frame{}, err
	}
	f := frame{t: framing.Result, id: id, line: string(line)}
	s.mu.Lock()
	out, want := s.out, s.outID
	s.mu.Unlock()
	if out == "" || id != want {
		_, err := io.Copy(io.Discard, body) // a reply to an abandoned request
		return f, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		f.tmpErr = fmt.Errorf("cannot write the result beside %s: %s", out, errText(err))
		_, err = io.Copy(io.Discard, body)
		return f, err
	}
	f.tmp = tmp.Name()
	s.phase.Store(phaseDownload)
	rest := int64(n - 6 - ll) // the .sve's bytes, announced by the frame
	if s.proc.Expect != nil {
		s.proc.Expect(rest)
		defer s.proc.Expect(0)
	}
	got, werr := framing.Copy(resultWriter(tmp), body)
	cerr := tmp.Close()
	if werr == nil && got < rest {
		// The stream ended inside the frame: never hand over a cut .sve.
		os.Remove(f.tmp)
		return frame{}, io.ErrUnexpectedEOF
	}
	if werr != nil {
		os.Remove(f.tmp)
		// Was it the file or the stream? Drain what is left: if that
		// fails too, the stream is broken.
		if _, derr := io.Copy(io.Discard, body); derr != nil {
			return frame{}, derr
		}
		var pe *os.PathError
		if errors.As(werr, &pe) {
			f.tmp, f.tmpErr = "", fmt.Errorf("cannot write the result %s: %s", out, errText(werr))
			return f, nil
		}
		return frame{}, werr
	}
	if cerr != nil {
		os.Remove(f.tmp)
		f.tmp, f.tmpErr = "", fmt.Errorf("cannot write the result %s: %s", out, errText(cerr))
	}
	return f, nil
}

// agentSession is one running agent.
type agentSession struct {
	l       *link
	proc    remote.Proc
	fw      *framing.Writer
	hello   chan struct{}
	info    framing.Info
	replies chan frame
	done    chan struct{} // its output ended
	closing chan struct{}
	once    sync.Once

	mu    sync.Mutex
	woke  *framing.AgentEvent
	tail  string
	out   string // the pending request's output path
	outID uint32

	beats chan framing.BeatInfo // the agent's Beat frames (dropped when not read)
	// heard and wrote are the last read from the agent and the last piece
	// of picture data the ssh window let through to it (UnixNano): an agent
	// that sends Beats and does neither for a few seconds is stopped or
	// frozen, or its link is lost (liveness.go tells which).
	heard, wrote atomic.Int64
	// phase is where the picture in flight is (phaseUpload...): the
	// picture's goroutine sets it, receiveResult moves it to phaseDownload.
	phase atomic.Int32
}

// lastProgress is when the agent last proved it works: a frame from it, or
// picture data taken.
func (s *agentSession) lastProgress() time.Time {
	return time.Unix(0, max(s.heard.Load(), s.wrote.Load()))
}

// touchReader and touchWriter record when the session last moved bytes.
type touchReader struct {
	r io.Reader
	t *atomic.Int64
}

func (x touchReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	if n > 0 {
		x.t.Store(time.Now().UnixNano())
	}
	return n, err
}

type touchWriter struct {
	w io.Writer
	t *atomic.Int64
}

// Write passes p on in pieces of progressPiece, recording each piece of
// picture data (at least progressWrite bytes) that went through: the ssh
// channel takes it only as the agent's window allows.
func (x touchWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := x.w.Write(p[n:min(len(p), n+progressPiece)])
		if m >= progressWrite {
			x.t.Store(time.Now().UnixNano())
		}
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
	}
	return n, nil
}

func (s *agentSession) expect(id uint32, out string) {
	s.mu.Lock()
	s.outID, s.out = id, out
	s.mu.Unlock()
}

func (l *link) startSession(p remote.Proc) *agentSession {
	s := &agentSession{l: l, proc: p, hello: make(chan struct{}),
		replies: make(chan frame, 2), done: make(chan struct{}), closing: make(chan struct{}), beats: make(chan framing.BeatInfo, 4)}
	now := time.Now().UnixNano()
	s.heard.Store(now)
	s.wrote.Store(now)
	s.fw = framing.NewWriter(touchWriter{p.Stdin, &s.wrote})
	l.wg.Add(2)
	go s.readFrames()
	go s.readStderr()
	return s
}

func (s *agentSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *agentSession) close() {
	s.once.Do(func() {
		close(s.closing)
		s.proc.Stdin.Close()
		s.proc.Close()
	})
}

func (s *agentSession) takeWoke() *framing.AgentEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.woke
	s.woke = nil
	return w
}

func (s *agentSession) stderrTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tail
}

func (s *agentSession) readStderr() {
	defer s.l.wg.Done()
	sc := bufio.NewScanner(s.proc.Stderr)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		s.mu.Lock()
		s.tail = line
		s.mu.Unlock()
		s.l.out.logf("second PC: %s", line) // developer log only; the tail goes into messages
		// The agent's own notes (an encoder argument of Strata's that the
		// second PC's encoder refused, dropped) are for the person, as on
		// this PC's CPU: once per relay.
		if rest, ok := strings.CutPrefix(line, "vision relay: "); ok && s.l.out.firstNote(rest) {
			s.l.out.note("on the second PC, " + rest)
		}
	}
}

func (s *agentSession) readFrames() {
	defer s.l.wg.Done()
	defer close(s.done)
	fr := framing.NewReader(touchReader{s.proc.Stdout, &s.heard})
	first := true
	for {
		t, n, err := fr.NextHeader()
		if err != nil {
			return
		}
		if t == framing.Result && !first {
			f, err := s.receiveResult(fr, n)
			if err != nil {
				return
			}
			select {
			case s.replies <- f:
			case <-s.closing:
				if f.tmp != "" {
					os.Remove(f.tmp)
				}
				return
			}
			continue
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(fr.Body(n), p); err != nil {
			return
		}
		if first {
			first = false
			if t != framing.Hello || json.Unmarshal(p, &s.info) != nil {
				s.mu.Lock()
				s.tail = "it did not greet as an agent (an old or foreign program?)"
				s.mu.Unlock()
				return
			}
			close(s.hello)
			continue
		}
		switch t {
		case framing.Pong:
		case framing.Beat:
			var b framing.BeatInfo
			if json.Unmarshal(p, &b) == nil {
				select {
				case s.beats <- b:
				default:
				}
			}
		case framing.Event:
			var e framing.AgentEvent
			if json.Unmarshal(p, &e) == nil {
				s.onEvent(e)
			}
		case framing.Error:
			if id, msg, err := framing.SplitID(p); err == nil && id == 0 {
				s.l.out.logf("second PC: %s", msg)
				continue
			}
			fallthrough
		default:
			select {
			case s.replies <- frame{t: t, p: p}:
			case <-s.closing:
				return
			}
		}
	}
}

func (s *agentSession) onEvent(e framing.AgentEvent) {
	l := s.l
	switch e.Kind {
	case "woke", "started":
		s.mu.Lock()
		if e.Kind == "woke" {
			s.woke = &e
		}
		s.mu.Unlock()
		l.out.noteNEmbd(e.NEmbd)
		if e.Kind == "started" || e.Where != nil {
			l.out.reportWhere(events.WhereRemote, l.host(), e.StartMS, e.Where, nil)
		}
	case "idle_stopped":
		l.out.emit("", events.EncoderIdleStoppedDetails{RelayMark: relayMark, IdleS: float64(e.IdleS), Where: events.WhereRemote, Host: l.host()})
		l.out.logf("the encoder on %s stopped after %d s without pictures (its VRAM is free)", l.host(), e.IdleS)
	case "failed":
		l.out.emit(e.Message, events.EncoderFailedDetails{RelayMark: relayMark, Where: events.WhereRemote, Host: l.host()})
	}
}
