// Package relay is the Strata-facing side of strata-vision-relay: it speaks
// Strata's encoder line protocol (READY, ENC, OK/ERR, QUIT) on stdin/stdout
// and does each picture's work on the second PC through one kept-alive ssh
// connection to the agent (internal/agent), with frames (internal/framing).
//
// What it promises Strata: READY at once, whatever the second PC does; one
// reply line per request within a bounded time, never a hang; an ERR that a
// person can act on; a .sve that is complete or absent; the next picture after
// the second PC comes back works without restarting anything.
package relay

import (
	"github.com/strata-companion/companion/internal/agentcmd"

	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// Bounds: every value and why it is what it is are in internal/relay/bounds
// (docs/relay.md, "Bounds", gives the user's view).
const (
	// DefaultConnectTimeout bounds reaching the second PC: TCP connect plus
	// the ssh handshake; also how long a kept connection may go without a
	// word between pictures before it is declared dead (bounds.IdleLinkLost).
	DefaultConnectTimeout = bounds.Connect
	// DefaultHelloTimeout bounds the agent's start on the second PC.
	DefaultHelloTimeout = bounds.AgentStart
	// DefaultRequestTimeout bounds a picture until a few were timed (the
	// agent's own bound for one encode); then the bound follows what
	// pictures take (pictureTimes.bound).
	DefaultRequestTimeout = bounds.Encode
)

// Options configure a Relay.
type Options struct {
	// Host names the second PC in messages ("second PC 192.168.1.20").
	Host string
	Dial Dialer
	// AgentCommand starts the agent on the second PC (AgentArgs.Command).
	AgentCommand string
	// NEmbd is what READY says.
	NEmbd int
	// ReportNEmbd hands an n_embd the second PC's encoder reported to the
	// service (which records it in the settings); optional, never blocks.
	ReportNEmbd func(int)
	// Settings returns the companion settings as they are now; it is called
	// for every picture (SettingsFile.Get: one stat, a reread on change).
	// Nil: every picture goes to the second PC of Host, Dial, AgentCommand.
	Settings func() (*settings.Settings, error)
	// Target turns the settings' second PC into where to dial and what to
	// run there (nil: only Host/Dial/AgentCommand; see main's target).
	Target func(settings.Remote) Target
	// LocalMmproj and LocalModel are what Strata passed (--mmproj, --model):
	// pictures read on this PC's CPU use the Q8_0 projector beside the
	// mmproj when there is one (CPUProjector), at Strata's own CPU settings
	// (LocalCPUDevice); never --gpu.
	LocalMmproj, LocalModel string
	// ExtraArgs are encoder arguments Strata passed that go on to every
	// encoder the relay starts (--flash-attn, --min-tokens, unknown ones).
	ExtraArgs []string
	// Notes receives a line for a person about an encoder argument that was
	// dropped (nil: discarded); written to Strata's engine log by main.
	Notes func(string)
	// ArgsProblem, when set, answers every picture: what was wrong with
	// Strata's arguments (the relay never exits on them).
	ArgsProblem string
	// Wake sends the Wake-on-LAN packet for the second PC (nil: wol.Send).
	Wake func(mac, broadcast string, port int) error
	// Report receives every event, for the service (ServiceReporter.Event);
	// it must not block. Nil: events are dropped.
	Report func(events.Event)
	// Log receives lines for a developer (tests); nil: discarded. Nothing
	// the relay does after READY is written to Stderr.
	Log io.Writer

	ConnectTimeout time.Duration
	HelloTimeout   time.Duration
	// RequestTimeout is the bound for a picture before any picture has
	// been timed; after that the bound follows what pictures take (bound).
	RequestTimeout time.Duration
	// RetryEvery is the pause between the background connection attempts
	// while the second PC is known to be down (default 2 s).
	RetryEvery time.Duration
	// SlowFailure: a dial that failed after at least this long makes the
	// second PC known down (default 1 s; a quicker failure is retried by
	// the next picture). Negative: every failure.
	SlowFailure time.Duration
	// LinkLost: while a picture is in flight, nothing from the second PC
	// for this long gives the link up (default bounds.LinkLost, 3 s).
	LinkLost time.Duration
}

// Target is the second PC as the relay reaches it.
type Target struct {
	Host         string
	Dial         Dialer
	AgentCommand string
	// IdleStopS is sent to a running agent when it changes (SetIdle).
	IdleStopS int
	// Err says why no agent command could be built for this second PC
	// (AgentArgs.Command); pictures answer it as ERR.
	Err error
	// OS is the system AgentCommand was quoted for; an agent whose own
	// hello names another kind (Windows against sh) is not used.
	OS string
	// Device is what its encoder was told to use (RemoteDevice).
	Device Device
}

// Relay serves one Strata encoder session.
//
// One picture at a time: Strata sends the next ENC only after the reply to
// the last one, and Run hands each picture to Encode on one goroutine and
// waits for it (lines that come meanwhile are queued, QUIT gives the picture
// up). So the fields under "the picture's" below are touched only by the
// goroutine reading the current picture, and need no lock; everything the
// background goroutines (the connection's monitor, the background retry, the
// agent session's readers) also touch is under its own mutex.
type Relay struct {
	opt Options

	// The second PC's notes already handed on (firstNote).
	notedMu sync.Mutex
	noted   map[string]bool

	// The picture's (one at a time; see above).
	conn      Conn
	connStop  chan struct{} // closed to stop the conn's monitor
	connDead  chan string   // the monitor's reason when it closed the conn
	check     *linkCheck    // what the conn's monitor learns of its link
	nextID    uint32
	targetKey string
	targetErr error  // Target.Err of the second PC in use
	targetOS  string // Target.OS of the second PC in use
	idleStopS int    // what the current session's agent was told
	cmdIdleS  int    // the idle stop in the agent's command line
	device    Device
	startMS   int // the encoder's start there as prepare measured it
	local     localEncoder
	times     pictureTimes // pictures on the second PC
	ltimes    pictureTimes // pictures on this PC's CPU
	wokeAt    time.Time
	pic       pictureNote // what the picture in hand did, for its outcome event

	// Shared with the monitor and the session's readers.
	inPicture     atomic.Bool // a picture is on the second PC: its link is checked often
	abortMu       sync.Mutex
	abortConn     Conn       // the connection in use, for abortLink
	outMu         sync.Mutex // Options.Log is written from several goroutines
	sessMu        sync.Mutex // guards sess against the monitor's read
	sess          *agentSession
	nMu           sync.Mutex
	reportedNEmbd int
	hostMu        sync.Mutex // guards opt.Host, opt.Dial, opt.AgentCommand against the monitor and prober
	whereMu       sync.Mutex
	lastWhere     map[string]framing.Where // per place ("remote", "local_cpu"): the last start line seen

	// Shared with the background retry (its own lock inside).
	link linkState

	wg sync.WaitGroup // every goroutine the relay starts
}

// pictureNote is what the picture in hand did: where it went and what the
// encoder said, for the one outcome event per picture.
type pictureNote struct {
	where    string
	host     string
	encodeMS int
	tokens   int
	// dialFailed: it could not reach the second PC (fallback or wake).
	dialFailed bool
}

// New makes a relay; Run serves it.
func New(opt Options) *Relay {
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = DefaultConnectTimeout
	}
	if opt.HelloTimeout <= 0 {
		opt.HelloTimeout = DefaultHelloTimeout
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	if opt.RetryEvery <= 0 {
		opt.RetryEvery = bounds.Retry
	}
	if opt.SlowFailure == 0 {
		opt.SlowFailure = bounds.SlowFailure
	}
	if opt.LinkLost <= 0 {
		opt.LinkLost = bounds.LinkLost
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	r := &Relay{opt: opt}
	r.link.init()
	return r
}

// logf writes a line for a developer (Options.Log), never to Strata's log.
func (r *Relay) logf(format string, args ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.opt.Log, "vision relay: "+format+"\n", args...)
}

// emit hands an event to the service (Options.Report), without waiting.
// Each names this relay process ("relay": its pid), so the service folds
// what the current relay saw, not what an earlier one did.
func (r *Relay) emit(msg string, d events.Payload) {
	e := events.New(msg, d)
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details["relay"] = relayPID
	e.Time = time.Now()
	if r.opt.Report != nil {
		r.opt.Report(e)
	}
}

// host names the second PC in messages.
func (r *Relay) host() string {
	r.hostMu.Lock()
	defer r.hostMu.Unlock()
	return r.opt.Host
}

// Run prints READY, then answers each request line until QUIT, the end of
// in, or ctx; it closes everything (the agent, the encoder it runs, the
// connection, the local encoder) before returning. Every request line gets
// exactly one reply line, QUIT excepted (the encoder protocol has none). A
// picture in flight is given up, with its ERR line, when QUIT, the end of in
// or ctx comes: Strata never waits on it to stop the relay.
func (r *Relay) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	reply := func(s string) error {
		w.WriteString(s)
		w.WriteByte('\n')
		return w.Flush()
	}
	defer r.Close()
	if err := reply("READY " + strconv.Itoa(r.opt.NEmbd)); err != nil {
		return err
	}
	r.start()
	lines := make(chan inLine)
	readErr := make(chan error, 1)
	// This reader is not in r.wg: a read cannot be interrupted, and Close
	// must not wait for Strata to close our stdin (the process exits anyway).
	go readLines(ctx, in, MaxLine, lines, readErr)
	var pending []inLine // lines that came while a picture was read
	for {
		var l inLine
		if len(pending) > 0 {
			l, pending = pending[0], pending[1:]
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-readErr:
				return err // end of input: Strata is gone
			case l = <-lines:
			}
		}
		if l.tooLong {
			if err := reply(fmt.Sprintf("ERR the request line is over %d KiB; expected ENC <image> <output>", MaxLine>>10)); err != nil {
				return err
			}
			continue
		}
		line := strings.TrimRight(l.s, "\r")
		switch {
		case line == "QUIT":
			return nil
		case strings.HasPrefix(line, "ENC "):
			img, sve, ok := splitENC(line[4:])
			if !ok {
				if err := reply("ERR the request " + strconv.Quote(line) + " is not ENC <image> <output>"); err != nil {
					return err
				}
				continue
			}
			pctx, cancel := context.WithCancel(ctx)
			res := make(chan string, 1)
			go func() { res <- replyLine(r.Encode(pctx, img, sve)) }()
			var stop error
			quit := false
		wait:
			for {
				select {
				case rep := <-res:
					cancel()
					if err := reply(rep); err != nil {
						return err
					}
					break wait
				case nl := <-lines:
					if nl.s == "QUIT" || nl.s == "QUIT\r" {
						quit = true
					} else {
						pending = append(pending, nl)
						continue
					}
				case stop = <-readErr:
					quit = true
				case <-ctx.Done():
					stop, quit = ctx.Err(), true
				}
				if quit {
					// Give the picture up; lines that came after it (Strata
					// sends one at a time, so only a confused client) get
					// one reply each too. Its session is closed first: a
					// write into a dead link's full window returns then.
					cancel()
					select {
					case rep := <-res:
						reply(rep)
					case <-time.After(bounds.StuckPicture):
						// Stuck on the link (a write into a dead link's
						// full window): closing the connection ends it.
						r.abortLink()
						reply(<-res)
					}
					for range pending {
						reply("ERR the relay is stopping")
					}
					return stop
				}
			}
		case strings.TrimSpace(line) == "":
			if err := reply("ERR an empty request line; expected ENC <image> <output>"); err != nil {
				return err
			}
		default:
			if err := reply("ERR unknown request " + strconv.Quote(line)); err != nil {
				return err
			}
		}
	}
}

// splitENC splits "<image> <output>". Strata does not quote its paths, and a
// Windows temp folder may hold spaces ("C:\Users\Ana Lu\..."): the image
// always ends in .img and the output in .sve, so split there first.
func splitENC(rest string) (img, out string, ok bool) {
	rest = strings.TrimSpace(rest)
	if i := strings.Index(rest, ".img "); i >= 0 && strings.HasSuffix(rest, ".sve") {
		return rest[:i+4], strings.TrimSpace(rest[i+5:]), true
	}
	f := strings.Fields(rest)
	if len(f) != 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// encodeRemote reads one picture on the second PC and returns the reply line
// ("OK ..." or "ERR ...").
func (r *Relay) encodeRemote(ctx context.Context, img, out string) string {
	t0 := time.Now()
	pic, refused := openPicture(img)
	if refused != "" {
		return refused
	}
	defer pic.Close()
	var picSize int
	if st, err := pic.Stat(); err == nil {
		picSize = int(st.Size())
	}
	r.pic.host = r.host()
	sess, err := r.session(ctx)
	if err != nil {
		return "ERR " + err.Error()
	}
	r.nextID++
	id := r.nextID
	sess.takeWoke() // a wake reported before this picture is not its wake
	sess.expect(id, out)
	defer sess.expect(0, "")
	// From here the link is checked every bounds.KeepalivePicture, and a
	// silence is judged every bounds.Check (liveness.go).
	r.inPicture.Store(true)
	defer r.inPicture.Store(false)
	lc := r.check
	if lc != nil {
		lc.wake()
	}
	sess.phase.Store(phaseUpload)
	sess.wrote.Store(time.Now().UnixNano()) // the agent's silence counts from the picture's start
	stopWatch := r.watchSend(sess, lc, r.conn)
	refused, err = sendPicture(ctx, sess.fw, id, pic)
	switch v, quiet := stopWatch(); v {
	case linkLost:
		return r.linkGone(sess, quiet)
	case agentHung:
		r.endHungAgent(sess)
		return fmt.Sprintf("ERR the agent on second PC %s stopped taking the picture (nothing from it for %s, though its link answers); it was ended, the next picture starts it again%s", r.host(), quiet.Round(100*time.Millisecond), unavailable)
	}
	if err != nil {
		return "ERR " + r.lostReason(sess, err)
	} else if refused != "" {
		return refused
	}
	if sess.info.BeatMS <= 0 {
		// An older agent says nothing more: it has it. A newer one is in
		// the upload until its first "starting" or "encoding" beat (on a
		// slow link the picture may drain for seconds after the write).
		sess.phase.CompareAndSwap(phaseUpload, phaseEncoding)
	}
	// The bound follows what the agent says it does (its Beat frames): a
	// start (a GPU's warm-up) may take what prepare measured it to take, a
	// picture what the last pictures took; and an agent that says nothing
	// for silenceBound (stopped, frozen, or its link gone) is given up at
	// once, whatever the bound.
	phase := framing.PhaseEncoding
	sawEncoding := false
	bound := r.times.bound(picSize, r.opt.RequestTimeout)
	if sess.info.BeatMS > 0 && r.times.count() < minSamples {
		bound = r.firstBound()
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	// The agent's silence (an agent that sends Beats) and the link's (any
	// agent) are judged every bounds.Check.
	silence := time.NewTicker(bounds.Check)
	defer silence.Stop()
	for {
		select {
		case <-ctx.Done():
			return "ERR the relay is stopping"
		case <-silence.C:
			switch v, quiet := r.judge(sess, lc, time.Now()); v {
			case linkLost:
				return r.linkGone(sess, quiet)
			case agentHung:
				r.endHungAgent(sess) // stopped or frozen: leave nothing running there
				return fmt.Sprintf("ERR the agent on second PC %s stopped answering (nothing from it for %s while it was %s the picture, though its link answers); it was ended, the next picture starts it again%s",
					r.host(), quiet.Round(100*time.Millisecond), hungWords[sess.phase.Load()], unavailable)
			}
		case b := <-sess.beats:
			if b.Phase == framing.PhaseReceiving {
				continue // the upload's beats: heard, no phase of the picture's
			}
			// id 0: the keep-running agent's warm-up at its start.
			// A picture goes from starting to encoding, never back: a
			// "starting" beat after an "encoding" one is a late beat of
			// the agent's (its beats are not waited for when a phase ends).
			late := b.Phase == framing.PhaseStarting && sawEncoding
			if b.ID == id && b.Phase == framing.PhaseEncoding {
				sawEncoding = true
			}
			if (b.ID != id && b.ID != 0) || late {
				continue
			}
			ph := phaseEncoding
			if b.Phase == framing.PhaseStarting {
				ph = phaseStarting
			}
			if cur := sess.phase.Load(); cur == phaseUpload || cur == phaseStarting || cur == phaseEncoding {
				sess.phase.CompareAndSwap(cur, ph) // not once the result comes (phaseDownload)
			}
			if b.Phase != phase {
				phase = b.Phase
				bound = r.times.bound(picSize, r.opt.RequestTimeout)
				if phase == framing.PhaseStarting {
					bound = r.startBound()
				} else if r.times.count() < minSamples {
					bound = r.firstBound()
				}
				timer.Reset(bound)
			}
		case <-timer.C:
			r.endHungAgent(sess) // it may be hung: leave nothing running there
			if phase == framing.PhaseStarting {
				return fmt.Sprintf("ERR the encoder on second PC %s did not start within %s; pictures are unavailable for now, text still works", r.host(), bound.Round(100*time.Millisecond))
			}
			return fmt.Sprintf("ERR second PC %s gave no result within %s (pictures took %s lately); pictures are unavailable for now, text still works", r.host(), bound.Round(100*time.Millisecond), r.times.median().Round(time.Millisecond))
		case <-sess.done:
			return "ERR " + r.lostReason(sess, nil)
		case f := <-sess.replies:
			switch f.t {
			case framing.Result:
				if f.id != id {
					if f.tmp != "" {
						os.Remove(f.tmp)
					}
					continue // a reply to an abandoned request
				}
				if f.tmpErr != nil {
					return "ERR " + f.tmpErr.Error()
				}
				if err := checkResult(f.line, f.tmp, r.opt.NEmbd); err != nil {
					os.Remove(f.tmp)
					r.logf("refused a result from %s: %v", r.host(), err)
					return "ERR " + oneLine(err.Error())
				}
				// The .sve is complete in its temporary file: a rename
				// makes it appear whole. Renaming over an existing file
				// makes ext4 (auto_da_alloc) write the new one to disk
				// inside rename(2), ~10 ms for a 10 MB .sve (bench/relay,
				// the same picture's name twice); a cached result need not
				// be on disk, so an old .sve of that name goes first
				// (Strata reads the file only after the OK line).
				if st, err := os.Lstat(out); err == nil && st.Mode().IsRegular() {
					os.Remove(out)
				}
				if err := os.Rename(f.tmp, out); err != nil {
					os.Remove(f.tmp)
					return "ERR cannot write the result " + out + ": " + errText(err)
				}
				r.times.add(time.Since(t0), picSize+int(fileSize(out)))
				r.reportPicture(sess, f.line)
				return f.line
			case framing.Error:
				rid, msg, _ := framing.SplitID(f.p)
				if rid != id {
					continue
				}
				return "ERR " + oneLine(string(msg))
			}
		}
	}
}

// reportPicture notes what the encoder said of a picture (its outcome event
// is Encode's) and reports a wake it cost.
func (r *Relay) reportPicture(sess *agentSession, okLine string) {
	tokens, encMS := okFields(okLine) // OK n nx ny ms
	r.pic.tokens, r.pic.encodeMS = tokens, encMS
	if w := sess.takeWoke(); w != nil {
		r.emit("", events.EncoderWokeDetails{StartMS: w.StartMS, EncodeMS: int64(encMS), Where: events.WhereRemote, Host: r.host()})
		r.logf("the encoder on %s woke: start %d ms, encode %d ms", r.host(), w.StartMS, encMS)
	}
}

// silenceBound is how long an agent that sends Beat frames may say nothing
// while it has a picture: three of its beats, at least bounds.HungAgent.
func (r *Relay) silenceBound(s *agentSession) time.Duration {
	return max(3*time.Duration(s.info.BeatMS)*time.Millisecond, bounds.HungAgent)
}

// firstBound bounds a picture before minSamples were timed: a GPU reads one
// in seconds (docs/strata.md: 1.6 s at 1024 tokens), a CPU in tens of seconds.
func (r *Relay) firstBound() time.Duration {
	if r.device.GPU {
		return bounds.FirstGPUPicture
	}
	return r.opt.RequestTimeout
}

// startBound bounds the encoder's start on the second PC (a GPU's warm-up):
// four times what prepare measured, at least 30 s; unknown, the agent's own
// bound (Strata's STRATA_VISION_READY_S, 300 s).
func (r *Relay) startBound() time.Duration {
	if ms := r.startMS; ms > 0 {
		return min(max(bounds.EncoderStartFactor*time.Duration(ms)*time.Millisecond, bounds.EncoderStartMin), bounds.EncoderStart)
	}
	return bounds.EncoderStart
}

// watchSend judges the silence while a picture is written to the agent (a
// stopped agent stops reading: the write would wait on the full ssh window
// for ever; a lost link holds it in a full socket buffer) and ends the write:
// a hung agent's session is closed and the agent signalled, a lost link's
// connection closed (c). The returned func stops the watch and says what it
// concluded (waitOn: nothing) and after how long a silence.
func (r *Relay) watchSend(s *agentSession, lc *linkCheck, c Conn) func() (verdict, time.Duration) {
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
				switch v, quiet := r.judge(s, lc, time.Now()); v {
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

func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(s))
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// relayPID names this relay in its events.
var relayPID = os.Getpid()

// unavailable ends every message about an unreachable PC.
const unavailable = "; pictures are unavailable, text still works"

// session returns the live agent session, connecting and starting the agent
// when needed.
func (r *Relay) session(ctx context.Context) (*agentSession, error) {
	if s := r.currentSession(); s != nil && !s.ended() {
		return s, nil
	}
	r.dropSession()
	for attempt := 0; ; attempt++ {
		if err := r.connect(ctx); err != nil {
			return nil, err
		}
		proc, err := r.conn.Start(r.opt.AgentCommand)
		if err != nil {
			// The kept connection died since its last check: one fresh dial.
			r.closeConn()
			if attempt == 0 {
				continue
			}
			return nil, fmt.Errorf("second PC %s accepted the connection but not the agent session (%v)%s", r.host(), err, unavailable)
		}
		s := r.startSession(proc)
		select {
		case <-s.hello:
			if r.targetOS != "" && s.info.OS != "" && (r.targetOS == "windows") != (s.info.OS == "windows") {
				// Its command line was quoted for another shell: whatever
				// the settings say, the agent's own hello decides.
				s.close()
				return nil, fmt.Errorf("the second PC %s runs %s, but the companion settings say %s; run `strata-service remote prepare` again%s", r.host(), s.info.OS, r.targetOS, unavailable)
			}
			r.setSession(s)
			if r.idleStopS != r.cmdIdleS { // changed since the command was built
				s.fw.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: r.idleStopS})
			}
			if s.info.Proto != framing.Version {
				r.logf("the agent on %s speaks protocol %d, this relay %d; pair the second PC again to update it (strata-service remote pair, or the setup's Pair: its key runs only the agent it was paired with)", r.host(), s.info.Proto, framing.Version)
			}
			r.noteNEmbd(s.info.NEmbd)
			return s, nil
		case <-s.done:
			s.close()
			why := s.stderrTail()
			if why == "" {
				why = "it ended at once"
			}
			return nil, fmt.Errorf("the agent on second PC %s did not start (%s); run `strata-service remote prepare`%s", r.host(), why, unavailable)
		case <-time.After(r.opt.HelloTimeout):
			s.close()
			return nil, fmt.Errorf("the agent on second PC %s did not answer within %s%s", r.host(), r.opt.HelloTimeout, unavailable)
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		}
	}
}

// connect makes sure a live connection exists.
func (r *Relay) connect(ctx context.Context) error {
	if r.conn != nil {
		select {
		case <-r.conn.Done():
			r.closeConn()
		default:
			return nil
		}
	}
	c := r.link.takeSpare() // made by the background retry
	if c == nil {
		var err error
		t0 := time.Now()
		c, err = r.dial(ctx)
		if err != nil {
			r.pic.dialFailed = true
			// Only a failure that takes long to find (no answer) is kept
			// as known down, re-checked in the background: one that is
			// quick (refused, reset, no route: about a millisecond on a
			// LAN) is simply tried again by the next picture, so a PC
			// whose ssh server is back is used at once. With Wake-on-LAN
			// on, any failure may be a PC asleep: known down, to wake it.
			if time.Since(t0) >= r.opt.SlowFailure || r.link.wakeOnNow() {
				r.markDown(err.Error())
			}
			return err
		}
	}
	r.conn, r.connStop, r.connDead, r.check = c, make(chan struct{}), make(chan string, 1), newLinkCheck()
	r.abortMu.Lock()
	r.abortConn = c
	r.abortMu.Unlock()
	r.wg.Add(1)
	go r.monitor(c, r.check, r.connStop, r.connDead)
	return nil
}

// dial opens a connection to the second PC and reports it: the time to
// connect (TCP and the ssh handshake) and, separately, the round trip
// measured by one keepalive on the open connection. A failure is reported
// on the transition to unreachable only.
func (r *Relay) dial(ctx context.Context) (Conn, error) {
	r.hostMu.Lock()
	dial, host := r.opt.Dial, r.opt.Host
	r.hostMu.Unlock()
	t0 := time.Now()
	c, err := dial(ctx, r.opt.ConnectTimeout)
	if err != nil {
		msg := r.dialMessage(err)
		r.logf("%s", msg)
		if r.link.setReachable(-1) != -1 {
			r.emit(msg, events.RemoteUnreachableDetails{Host: host, Reason: string(sshx.Classify(err))})
		}
		return nil, errors.New(msg)
	}
	handshake := time.Since(t0)
	if r.link.setReachable(1) == -1 {
		r.link.clearFallback()
		r.emit("second PC "+host+" answers again; pictures go there", events.RemoteReachableDetails{Host: host})
	}
	rtt := time.Duration(-1)
	actx, cancel := context.WithTimeout(ctx, r.opt.ConnectTimeout)
	// The first request on a new connection pays for setting up its
	// channels' windows on some servers: measure the second.
	if c.Alive(actx) == nil {
		t1 := time.Now()
		if c.Alive(actx) == nil {
			rtt = time.Since(t1)
		}
	}
	cancel()
	r.emit("", events.RemoteConnectedDetails{Host: host, RTTms: float64(rtt.Microseconds()) / 1000, ConnectMS: handshake.Milliseconds()})
	r.logf("connected to second PC %s (connect and ssh handshake %d ms, round trip %.2f ms)", host, handshake.Milliseconds(), float64(rtt.Microseconds())/1000)
	return c, nil
}

func (r *Relay) dialMessage(err error) string {
	var de *sshx.DialError
	prefix := "second PC " + r.host()
	if !errors.As(err, &de) {
		return err.Error() + unavailable
	}
	switch sshx.Classify(err) {
	case sshx.ReasonTimedOut:
		return fmt.Sprintf("%s did not answer within %s%s", prefix, r.opt.ConnectTimeout.Round(time.Second), unavailable)
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
func (r *Relay) monitor(c Conn, lc *linkCheck, stop chan struct{}, dead chan string) {
	defer r.wg.Done()
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
			dead <- "the connection to second PC " + r.host() + " closed"
			r.emit("the connection to second PC "+r.host()+" closed", events.RemoteDisconnectedDetails{Host: r.host()})
			r.logf("the connection to second PC %s closed", r.host())
			return
		case <-tick.C:
		case <-lc.kick:
		}
		now := time.Now()
		every, wake := bounds.KeepaliveIdle, bounds.KeepaliveIdle
		if r.inPicture.Load() {
			every, wake = bounds.KeepalivePicture, bounds.Check
		}
		tick.Reset(wake)
		// Half a check early counts as due: a timer that fires a moment
		// before the interval must not skip a whole one.
		if now.Sub(lastSent) >= every-bounds.Check/2 && lc.pending.CompareAndSwap(false, true) {
			lastSent = now
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				if c.Alive(ctx) == nil {
					lc.answered.Store(time.Now().UnixNano())
				}
				lc.pending.Store(false)
			}()
		}
		if !r.inPicture.Load() {
			heard := lc.answeredAt()
			if s := r.currentSession(); s != nil && s.lastProgress().After(heard) {
				heard = s.lastProgress()
			}
			if now.Sub(heard) > r.opt.ConnectTimeout {
				reason := fmt.Sprintf("second PC %s did not answer within %s", r.host(), r.opt.ConnectTimeout.Round(time.Second))
				dead <- reason
				c.Close()
				r.emit(reason, events.RemoteDisconnectedDetails{Host: r.host()})
				r.logf("%s; closing the connection", reason)
				// It vanished: known down until the background retry
				// reaches it again, so pictures are answered at once.
				r.markDown(reason + unavailable)
				return
			}
		}
		if now.Sub(lastPing) >= bounds.Ping-bounds.Check/2 {
			if s := r.currentSession(); s != nil {
				s.fw.Write(framing.Ping)
			}
			lastPing = now
		}
	}
}

func (r *Relay) currentSession() *agentSession {
	r.sessMu.Lock()
	defer r.sessMu.Unlock()
	return r.sess
}

func (r *Relay) setSession(s *agentSession) {
	r.sessMu.Lock()
	r.sess = s
	r.sessMu.Unlock()
}

// lostReason says why a session ended mid-picture.
func (r *Relay) lostReason(s *agentSession, err error) string {
	// Wait briefly for the connection's verdict, so the message names the
	// real cause (the PC vs. the agent).
	select {
	case why := <-r.connDead:
		r.connDead <- why
		r.dropSession()
		return why + " while reading a picture" + unavailable
	case <-time.After(bounds.LostVerdict):
	}
	tail := s.stderrTail()
	r.dropSession()
	msg := "the agent on second PC " + r.host() + " stopped while reading the picture"
	if tail != "" {
		msg += " (" + tail + ")"
	} else if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return msg + "; the next picture starts it again"
}

func (r *Relay) dropSession() {
	r.sessMu.Lock()
	s := r.sess
	r.sess = nil
	r.sessMu.Unlock()
	if s != nil {
		s.close()
	}
}

// abortLink closes the connection in use from another goroutine than the
// picture's (Run, on QUIT): whatever waits on it returns.
func (r *Relay) abortLink() {
	r.abortMu.Lock()
	c := r.abortConn
	r.abortMu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (r *Relay) closeConn() {
	if r.conn == nil {
		return
	}
	close(r.connStop)
	r.conn.Close()
	r.conn = nil
}

// Close ends the agent session (the agent stops its encoder and removes its
// scratch folder when its input ends), then the connection, and waits for
// every goroutine the relay started.
func (r *Relay) Close() {
	// Bounded whatever the link does: a dead connection (black-holed, its
	// PC gone without a word) is closed, not waited on. Strata waits on its
	// encoder's exit, and text with it.
	if s := r.currentSession(); s != nil {
		s.proc.Stdin.Close()
		select {
		case <-s.done:
		case <-time.After(bounds.AgentEnd):
			killed := make(chan struct{})
			r.wg.Add(1)
			c := r.conn
			go func() { defer r.wg.Done(); r.killAgentOn(s, c); close(killed) }()
			select {
			case <-killed:
			case <-time.After(bounds.KillWait):
				// The link does not answer: closing it below ends the wait.
			}
		}
	}
	r.dropSession()
	r.closeConn()
	r.link.stopRetry()
	r.local.stop(bounds.LocalEncoderQuit)
	r.wg.Wait()
}

// killAgent ends an agent that does not end by itself (hung, or stopped:
// it cannot read its input's end): a signal through the session where the
// second PC's sshd allows it, else a kill of the pid it announced, run in a
// session of its own. Its encoder dies with it (a parent-death signal on
// Linux, a Job Object on Windows).
func (r *Relay) killAgent(s *agentSession) { r.killAgentOn(s, r.conn) }

// killAgentOn is killAgent over the connection c.
func (r *Relay) killAgentOn(s *agentSession, c Conn) {
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
		r.logf("could not end the hung agent on %s: %v", r.host(), err)
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

// noteNEmbd records an n_embd the agent reported.
func (r *Relay) noteNEmbd(n int) {
	if n <= 0 {
		return
	}
	r.nMu.Lock()
	defer r.nMu.Unlock()
	if n != r.opt.NEmbd && r.opt.NEmbd != 0 {
		r.emit(fmt.Sprintf("READY said n_embd %d but the second PC's encoder reports %d; restart Strata so it uses %d", r.opt.NEmbd, n, n), events.EncoderFailedDetails{Where: events.WhereRemote, NEmbd: n})
	}
	if n == r.reportedNEmbd || r.opt.ReportNEmbd == nil {
		return
	}
	// The service records it in the settings: the relay never writes them.
	r.opt.ReportNEmbd(n)
	r.reportedNEmbd = n
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
	r       *Relay
	proc    Proc
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

func (r *Relay) startSession(p Proc) *agentSession {
	s := &agentSession{r: r, proc: p, hello: make(chan struct{}),
		replies: make(chan frame, 2), done: make(chan struct{}), closing: make(chan struct{}), beats: make(chan framing.BeatInfo, 4)}
	now := time.Now().UnixNano()
	s.heard.Store(now)
	s.wrote.Store(now)
	s.fw = framing.NewWriter(touchWriter{p.Stdin, &s.wrote})
	r.wg.Add(2)
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
	defer s.r.wg.Done()
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
		s.r.logf("second PC: %s", line) // developer log only; the tail goes into messages
		// The agent's own notes (an encoder argument of Strata's that the
		// second PC's encoder refused, dropped) are for the person, as on
		// this PC's CPU: once per relay.
		if rest, ok := strings.CutPrefix(line, "vision relay: "); ok && s.r.firstNote(rest) {
			s.r.note("on the second PC, " + rest)
		}
	}
}

func (s *agentSession) readFrames() {
	defer s.r.wg.Done()
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
				s.r.logf("second PC: %s", msg)
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
	r := s.r
	switch e.Kind {
	case "woke", "started":
		s.mu.Lock()
		if e.Kind == "woke" {
			s.woke = &e
		}
		s.mu.Unlock()
		r.noteNEmbd(e.NEmbd)
		if e.Kind == "started" || e.Where != nil {
			r.reportWhere(events.WhereRemote, r.host(), e.StartMS, e.Where, nil)
		}
	case "idle_stopped":
		r.emit("", events.EncoderIdleStoppedDetails{IdleS: float64(e.IdleS), Where: events.WhereRemote, Host: r.host()})
		r.logf("the encoder on %s stopped after %d s without pictures (its VRAM is free)", r.host(), e.IdleS)
	case "failed":
		r.emit(e.Message, events.EncoderFailedDetails{Where: events.WhereRemote, Host: r.host()})
	}
}
