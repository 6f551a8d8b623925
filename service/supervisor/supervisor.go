// Package supervisor runs the Strata server as Strata's own docs start it
// (the venv's python, serve/server.py --engine strata --config C --port P,
// never --open, in the Strata root; docs/strata.md), captures its output
// into a rotated log, follows the engine log, turns recognised lines into
// events, waits minutes for the first `ready:`, restarts it with backoff
// after a crash, gives up on a crash loop or a busy port with the reason,
// and stops the whole process tree gracefully.
//
// One goroutine (Run) owns every decision; the process's output readers, the
// health poller and the callers of Start/Stop/Restart only send it messages.
// What is shared besides: the output tail and the log's drop count (outMu),
// the few facts the readers learn about a process (process.mu), and the
// queues to the log and console writers. Nothing that can block on the
// outside world runs in the decision loop or under a lock: the log file and
// the console are written by goroutines of their own (a stalled disk or
// terminal drops lines, counted, instead of stalling the pipe readers or
// Stop), and /health is asked by the health poller and by the goroutine
// that announces a ready line, never by the loop.
package supervisor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fserr"
	"github.com/strata-companion/companion/internal/loglines"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratatmp"
)

// Publisher receives the supervisor's events (service/state.Tracker, or an
// events.Bus).
type Publisher interface {
	Publish(events.Event) events.Event
}

// Config is what the supervisor needs. Zero durations take the defaults.
type Config struct {
	StrataRoot string // the folder holding serve/server.py
	ConfigPath string // strata-<tag>.json
	// Port overrides the config's port (0: the config's, else 8080).
	Port int
	// Python overrides the venv's python (tests, unusual installs).
	Python string
	// Env is added to the service's environment for the server.
	Env []string
	// LogFile receives the server's stdout and stderr, rotated; "" keeps
	// only the in-memory tail.
	LogFile string
	// PIDFile records the running server (pid, group, start time), so the
	// next run finds and ends a server an earlier run left behind; "" keeps
	// no record.
	PIDFile string
	// Console, when set, gets every output line as is (foreground `run`).
	Console io.Writer
	Events  Publisher
	// Logf reports the supervisor's own troubles; nil discards them.
	Logf func(format string, args ...any)

	// StartTimeout is how long the first `ready:` may take (default 10 min:
	// Strata's first start takes 1-3 min and the PC may stall meanwhile).
	StartTimeout time.Duration
	// StopTimeout is how long a stop waits after SIGTERM / Ctrl-Break before
	// killing the tree (default 30 s; Strata gives its encoder 10 s).
	StopTimeout time.Duration
	// Backoff is the delay before the nth restart in the crash window
	// (default 2, 4, 8, ... s, at most 60 s).
	Backoff func(n int) time.Duration
	// CrashLimit crashes within CrashWindow mean a crash loop: give up
	// (defaults 5 and 10 min).
	CrashLimit  int
	CrashWindow time.Duration
	// ProgressEvery is how often a start that is still going is reported
	// (default 15 s).
	ProgressEvery time.Duration
	// HealthEvery is how often /health and /v1/status are polled while the
	// server starts (default 10 s); once it is ready, every CalmHealthEvery.
	HealthEvery time.Duration
	// CalmHealthEvery is the health poll of a ready server with vision
	// (default 60 s): exits come from waitpid and log lines by
	// notification, so it only follows the encoder's availability in
	// /v1/status. Without vision there is nothing to follow: every
	// 5 x CalmHealthEvery.
	CalmHealthEvery time.Duration
	// FollowEvery is the backstop poll of the engine log and the Strata
	// config; changes arrive by notification (default 5 min: Strata writes
	// its log on this PC, and a local write notifies even on a network
	// share). While a ready server is polled, the backstop round goes with
	// each health poll.
	FollowEvery time.Duration
	// KeepLines is how many last output lines are kept for reports (default 40).
	KeepLines int
	// StartStopped makes Run wait for Start instead of starting at once.
	StartStopped bool
}

// DefaultBackoff doubles from 2 s up to 60 s.
func DefaultBackoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := 2 * time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	if d > time.Minute {
		d = time.Minute
	}
	return d
}

func (c *Config) defaults() {
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Minute
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 30 * time.Second
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.CrashLimit == 0 {
		c.CrashLimit = 5
	}
	if c.CrashWindow == 0 {
		c.CrashWindow = 10 * time.Minute
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 15 * time.Second
	}
	if c.HealthEvery == 0 {
		c.HealthEvery = 10 * time.Second
	}
	if c.CalmHealthEvery == 0 {
		c.CalmHealthEvery = max(60*time.Second, c.HealthEvery)
	}
	if c.FollowEvery == 0 {
		c.FollowEvery = 5 * time.Minute
	}
	if c.KeepLines == 0 {
		c.KeepLines = 40
	}
	if c.Python == "" {
		c.Python = VenvPython(c.StrataRoot)
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Supervisor runs one Strata server.
type Supervisor struct {
	cfg  Config
	cmds chan command
	// lastRun is the server started last (Run's goroutine only): its temp
	// folders are removed when the next one starts.
	lastRun *process

	// secret is the current start's controlapi.EnvRelaySecret ("" while
	// no server runs), under secretMu: the API's goroutines ask StartedRelay.
	secretMu sync.Mutex
	secret   string

	outMu sync.Mutex // guards ring and the drop count
	ring  []string
	log   *lumberjack.Logger // written only by writeLog
	// logQ and consoleQ carry lines to writeLog and writeConsole (nil
	// without a log file or console); a full queue drops the line.
	logQ, consoleQ chan outLine
	// dropped counts lines the log file refused (a full disk); dropping is
	// true from a refusal until a line is written again, and reported is
	// when the count was last published.
	dropped  int
	dropping bool
	reported time.Time

	ready   chan readyMsg
	started chan struct{} // closed when Run begins
	// healthRound is a calm health poll's nudge to the engine-log
	// follower: its backstop round rides on the same wake-up instead of a
	// timer of its own (an idle service wakes once a minute, bench/idle).
	healthRound chan struct{}
}

type command struct {
	action string
	done   chan error
}

// outLine is one line on its way to the log file or the console.
type outLine struct {
	at     time.Time
	stream string
	text   string
}

// outQueue is how many lines may wait for a slow log file or console
// before new ones are dropped.
const outQueue = 4096

// errLogBehind is a line dropped because the log file did not keep up.
var errLogBehind = errors.New("the log file does not keep up (a stalled disk?), so new lines were dropped")

type readyMsg struct {
	proc    *process
	details events.ServerReadyDetails
}

// New checks cfg and returns a supervisor; Run starts it.
func New(cfg Config) (*Supervisor, error) {
	if cfg.StrataRoot == "" || cfg.ConfigPath == "" {
		return nil, errors.New("the supervisor needs the Strata root and the config path")
	}
	if cfg.Events == nil {
		return nil, errors.New("the supervisor needs an event publisher")
	}
	cfg.defaults()
	s := &Supervisor{cfg: cfg, cmds: make(chan command), ready: make(chan readyMsg, 4), started: make(chan struct{}),
		healthRound: make(chan struct{}, 1)}
	if cfg.LogFile != "" {
		s.log = &lumberjack.Logger{Filename: cfg.LogFile, MaxSize: 20, MaxBackups: 5}
		s.logQ = make(chan outLine, outQueue)
	}
	if cfg.Console != nil {
		s.consoleQ = make(chan outLine, outQueue)
	}
	return s, nil
}

// LogFile is the captured output's file ("" if none).
func (s *Supervisor) LogFile() string { return s.cfg.LogFile }

// Start asks for the server to run (and clears a failed state).
func (s *Supervisor) Start(ctx context.Context) error { return s.send(ctx, "start") }

// Stop asks for the server to stop; it returns once the stop has begun.
func (s *Supervisor) Stop(ctx context.Context) error { return s.send(ctx, "stop") }

// Restart stops the server if it runs and starts it again.
func (s *Supervisor) Restart(ctx context.Context) error { return s.send(ctx, "restart") }

// Unload has the running server unload its model (Strata's POST
// /v1/unload with the config's key): its engine and encoder end and give
// their memory back; the server keeps answering and loads the model again
// on the next request. The state follows from /health (model.unloaded).
func (s *Supervisor) Unload(ctx context.Context) error { return s.send(ctx, "unload") }

func (s *Supervisor) send(ctx context.Context, action string) error {
	c := command{action: action, done: make(chan error, 1)}
	select {
	case s.cmds <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StoppedWithService is the server.stopped message when the supervisor
// ends with its context (the daemon names the operation that ended it).
const StoppedWithService = "the Strata server was stopped because the service is stopping"

// LastLines is the tail of the server's output kept in memory.
func (s *Supervisor) LastLines() []string {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return append([]string(nil), s.ring...)
}

func (s *Supervisor) pub(msg string, d events.Payload) events.Event {
	return s.cfg.Events.Publish(events.New(msg, d))
}

// process is one run of the server.
type process struct {
	cmd      *exec.Cmd
	pid      int
	port     int
	started  time.Time
	exited   chan struct{} // closed after Wait and after the output is read
	readers  sync.WaitGroup
	sys      sysProc // the process group / job object
	apiKey   string
	mark     string // EnvServerMark's value for this start
	vision   bool
	tmp      *stratatmp.Run // the temp folders before it started
	exitedAt time.Time      // set before exited is closed
	stopping bool           // a stop was asked (the exit is expected)
	restart  bool           // start again after the expected exit
	timedOut bool

	// reload nudges the health poller to poll at the start's pace: a
	// line came while the model was unloaded (the next request is loading
	// it again).
	reload chan struct{}

	mu           sync.Mutex // guards the fields below, set by the readers
	isReady      bool
	uid          int  // the account the server runs as (Unix)
	foreignSaid  bool // another account's listener on the port was named
	portInUse    bool
	encoderFatal string
	lastStrata   string // the last [strata] line, for progress
	lastWords    string // the last line that can say why it ended (lastWordsOf)
	// unloaded: Strata unloaded its model (its line, or /health); the
	// health poller publishes the reload when /health says loaded again.
	unloaded bool
}

func (p *process) flag(f func(p *process)) {
	p.mu.Lock()
	f(p)
	p.mu.Unlock()
}

// Run supervises until ctx ends, then stops the server and returns.
func (s *Supervisor) Run(ctx context.Context) error {
	close(s.started)
	stopWriters := s.startWriters()
	defer close(stopWriters) // they write what is queued, then end
	stopFollow := s.followLog(ctx)
	defer stopFollow()

	l := &loop{s: s, ctx: ctx, want: !s.cfg.StartStopped}
	if l.want {
		l.launch()
	}
	for {
		select {
		case <-ctx.Done():
			l.shutdown()
			return nil
		case c := <-s.cmds:
			l.command(c)
		case r := <-s.ready:
			l.ready(r)
		case <-l.progressC:
			l.stillStarting()
		case <-l.startTimer:
			l.startTimedOut()
		case <-l.restartTimer:
			l.restartDue()
		case <-l.exited():
			l.ended()
		}
	}
}

// startWriters starts the log file's and the console's writers; closing
// the channel returned ends them once they wrote what is queued.
func (s *Supervisor) startWriters() chan struct{} {
	stop := make(chan struct{})
	if s.logQ != nil {
		go s.writeOut(s.logQ, stop, s.writeLogLine)
	}
	if s.consoleQ != nil {
		go s.writeOut(s.consoleQ, stop, s.writeConsoleLine)
	}
	return stop
}

// followLog follows the engine's log from where it ends now, before any
// server writes to it, until the function returned is called or ctx ends.
func (s *Supervisor) followLog(ctx context.Context) context.CancelFunc {
	followCtx, stop := context.WithCancel(ctx)
	follow := newLogFollow()
	s.logRound(follow)
	go s.followEngineLog(followCtx, follow)
	return stop
}

// loop is Run's state: the server process (nil: none runs), whether it is
// wanted, whether it failed for good, its recent crashes, and the timers
// of its start and its restart.
type loop struct {
	s   *Supervisor
	ctx context.Context

	proc         *process
	want         bool
	failed       bool
	crashes      []time.Time
	restartTimer <-chan time.Time
	startTimer   <-chan time.Time
	progress     *time.Ticker
	progressC    <-chan time.Time
	healthStop   context.CancelFunc
}

// exited is the running process's end (nil, which never fires, when none).
func (l *loop) exited() chan struct{} {
	if l.proc == nil {
		return nil
	}
	return l.proc.exited
}

// launch starts the server, its start's deadline and progress, and its
// health poll; a launch that fails is a failure for good.
func (l *loop) launch() {
	s := l.s
	l.restartTimer, l.startTimer = nil, nil
	p, err := s.launch()
	if err != nil {
		l.want, l.failed = false, true
		s.pub(err.Error(), events.ServerFailedDetails{Reason: "launch"})
		return
	}
	l.proc = p
	l.startTimer = time.After(s.cfg.StartTimeout)
	l.progress = time.NewTicker(s.cfg.ProgressEvery)
	l.progressC = l.progress.C
	var hctx context.Context
	hctx, l.healthStop = context.WithCancel(l.ctx)
	go s.pollHealth(hctx, p)
}

func (l *loop) stopProgress() {
	if l.progress != nil {
		l.progress.Stop()
		l.progress, l.progressC = nil, nil
	}
}

func (l *loop) stopHealth() {
	if l.healthStop != nil {
		l.healthStop()
	}
}

// shutdown stops the server with the service.
func (l *loop) shutdown() {
	s := l.s
	l.restartTimer = nil
	if l.proc != nil {
		s.terminate(l.proc)
		<-l.proc.exited
		s.finish(l.proc)
		s.pub(StoppedWithService, events.ServerStoppedDetails{})
	}
	l.stopProgress()
	l.stopHealth()
}

// command carries out Start, Stop, Restart or Unload and answers it.
func (l *loop) command(c command) {
	switch c.action {
	case "start":
		l.start()
	case "stop":
		l.stop()
	case "restart":
		l.restart()
	case "unload":
		l.unload(c.done) // it answers when the server did
		return
	default:
		c.done <- fmt.Errorf("unknown action %q", c.action)
		return
	}
	c.done <- nil
}

// start wants the server running again (a failure is forgotten).
func (l *loop) start() {
	l.want = true
	if l.failed {
		l.failed, l.crashes = false, nil
	}
	if l.proc == nil {
		l.launch()
	} else if l.proc.stopping {
		l.proc.restart = true // start again once the stop is over
	}
}

func (l *loop) stop() {
	l.want, l.restartTimer = false, nil
	if l.proc != nil {
		l.proc.restart = false
		l.s.terminate(l.proc)
	} else if !l.failed {
		l.s.pub("the Strata server is stopped", events.ServerStoppedDetails{})
	}
}

func (l *loop) restart() {
	l.want, l.failed, l.crashes = true, false, nil
	if l.proc != nil {
		l.proc.restart = true
		l.s.terminate(l.proc)
	} else {
		l.launch()
	}
}

// unload asks a ready server to unload its model, off the loop: the server
// answers when its engine has ended.
func (l *loop) unload(done chan<- error) {
	ready := false
	if l.proc != nil {
		l.proc.flag(func(p *process) { ready = p.isReady && !p.stopping })
	}
	if !ready {
		done <- errors.New("the Strata server is not running and ready: there is no model to unload")
		return
	}
	go func(ctx context.Context, port int, key string) {
		done <- unloadModel(ctx, port, key)
	}(l.ctx, l.proc.port, l.proc.apiKey)
}

// ready announces the running server ready, once (the ready line and the
// health poll may both see it).
func (l *loop) ready(r readyMsg) {
	proc := l.proc
	if r.proc != proc || proc == nil {
		return
	}
	already := false
	proc.flag(func(p *process) { already, p.isReady = p.isReady, true })
	if already {
		return
	}
	l.startTimer = nil
	l.stopProgress()
	r.details.PID = proc.pid
	l.s.pub(fmt.Sprintf("the Strata server is ready at %s (after %.1f s)", r.details.URL, time.Since(proc.started).Seconds()), r.details)
}

// stillStarting says how long the start takes so far, and Strata's last line.
func (l *loop) stillStarting() {
	proc := l.proc
	proc.mu.Lock()
	last := proc.lastStrata
	proc.mu.Unlock()
	msg := fmt.Sprintf("still starting after %d s", int(time.Since(proc.started).Seconds()))
	if last != "" {
		msg += "; last: " + last
	}
	l.s.pub(msg, events.ServerProgressDetails{ElapsedS: int(time.Since(proc.started).Seconds())})
	l.s.toConsole(outLine{at: time.Now(), stream: "supervisor", text: msg})
}

// startTimedOut stops a server that did not get ready in time (its exit
// then says so).
func (l *loop) startTimedOut() {
	l.startTimer = nil
	l.proc.timedOut = true
	l.s.terminate(l.proc)
}

func (l *loop) restartDue() {
	l.restartTimer = nil
	if l.want && l.proc == nil {
		l.launch()
	}
}

// ended handles the server's exit: an asked-for stop (and maybe a start
// again), or an unexpected end, which fails for good when it cannot be
// helped by a restart, and is otherwise restarted after a backoff.
func (l *loop) ended() {
	s, p := l.s, l.proc
	l.proc = nil
	l.startTimer = nil
	l.stopProgress()
	l.stopHealth()
	code, how := s.finish(p)
	last := s.LastLines()
	details := events.ServerExitedDetails{Code: code, Expected: p.stopping && !p.timedOut, PID: p.pid, LastLines: last}
	if p.stopping && !p.timedOut {
		l.stopped(p, how, details)
		return
	}
	words := l.exitedUnexpectedly(p, how, details)
	reason := l.failReason(p, code, words)
	switch {
	case reason != "":
		l.want, l.failed = false, true
		s.pub(reason, events.ServerFailedDetails{LastLines: last, Code: code})
	case !l.want:
		s.pub("the Strata server is stopped", events.ServerStoppedDetails{})
	default:
		l.restartLater()
	}
}

// stopped is the asked-for stop's end: a start again when one was asked
// for and the server is still wanted.
func (l *loop) stopped(p *process, how string, details events.ServerExitedDetails) {
	l.s.pub("the Strata server stopped ("+how+")", details)
	if p.restart && l.want {
		l.launch()
		return
	}
	l.s.pub("the Strata server is stopped", events.ServerStoppedDetails{})
}

// exitedUnexpectedly says the server ended on its own, with Strata's own
// reason (for the owner: status, the tray; not only in the operators'
// last_lines and the log), which it returns.
func (l *loop) exitedUnexpectedly(p *process, how string, details events.ServerExitedDetails) string {
	p.mu.Lock()
	words := p.lastWords
	p.mu.Unlock()
	msg := "the Strata server exited unexpectedly (" + how + ")"
	if words != "" {
		msg += ": " + words
		details.LastWords = words
	}
	l.s.pub(msg, details)
	return words
}

// failReason is why the server's unexpected end is a failure for good
// ("" when a restart may help): a start that timed out, a port in use, an
// encoder that cannot start, Strata refusing its config, or too many
// crashes in a row (counted here).
func (l *loop) failReason(p *process, code int, words string) string {
	s := l.s
	p.mu.Lock()
	portInUse, encFatal, wasReady := p.portInUse, p.encoderFatal, p.isReady
	p.mu.Unlock()
	switch {
	case p.timedOut:
		return fmt.Sprintf("the Strata server did not get ready within %s; it was stopped. Its last output is in %s", s.cfg.StartTimeout, s.logName())
	case portInUse:
		return fmt.Sprintf("port %d is already in use: another program (perhaps another Strata) listens there. Stop it, or set another port, then start the server again", p.port)
	case encFatal != "":
		return "the vision encoder did not start: " + encFatal + ". Change where pictures are read (strata-service vision ...) or turn vision off, then start the server again"
	case code == 2 && !wasReady:
		// Exit code 2 before ready is Strata refusing its config or
		// its arguments (lazy loading with vision, a remote stage
		// with vision, ...): the same config meets the same refusal,
		// so no restart loop.
		if reason := s.refusal(words); reason != "" {
			return reason
		}
	}
	return l.countCrash()
}

// countCrash counts one more crash within the crash window; too many is
// a failure for good (its reason, else "").
func (l *loop) countCrash() string {
	s := l.s
	now := time.Now()
	l.crashes = append(l.crashes, now)
	for len(l.crashes) > 0 && now.Sub(l.crashes[0]) > s.cfg.CrashWindow {
		l.crashes = l.crashes[1:]
	}
	if len(l.crashes) >= s.cfg.CrashLimit {
		return fmt.Sprintf("the Strata server crashed %d times within %s; not restarting it again. Its last output is in %s", len(l.crashes), s.cfg.CrashWindow, s.logName())
	}
	return ""
}

// restartLater restarts the server after the backoff for its crashes.
func (l *loop) restartLater() {
	delay := l.s.cfg.Backoff(len(l.crashes))
	l.s.pub(fmt.Sprintf("restarting the Strata server in %s (attempt %d)", delay, len(l.crashes)),
		events.ServerRestartingDetails{Attempt: len(l.crashes), DelayS: delay.Seconds()})
	l.restartTimer = time.After(delay)
}

// refusal is the reason given when Strata refused to start (exit code 2
// before ready): its own words, and the fix when the config says what it is.
func (s *Supervisor) refusal(words string) string {
	reason := "Strata refused to start"
	if words != "" {
		reason += ": " + words
	}
	if sc, err := strataconfig.Read(s.cfg.ConfigPath); err == nil {
		for _, p := range sc.Problems {
			if p.Key == strataconfig.LazyKey {
				return reason + ". " + s.cfg.ConfigPath + " has lazy loading on together with vision: " + strataconfig.LazyFix + ". Restarting cannot fix this, so the service does not restart it"
			}
		}
	}
	return reason + ". Restarting with the same config cannot fix this, so the service does not restart it: change the config, then start the server again. Its last output is in " + s.logName()
}

// lastWordsOf says whether an output line can be the server's last words
// (why it ended): not a blank line, not a traceback's frames, not its
// routine progress; argparse's "usage:" line neither. A "prog: error: X"
// line gives "X".
func lastWordsOf(line string) (string, bool) {
	t := strings.TrimSpace(line)
	switch {
	case t == "", line[0] == ' ', line[0] == '\t', strings.HasPrefix(t, "Traceback ("), strings.HasPrefix(t, "usage:"),
		strings.Contains(t, "[strata] stopping"), strings.HasPrefix(t, "ready:"):
		return "", false
	}
	if i := strings.Index(t, ": error: "); i >= 0 && !strings.Contains(t[:i], " ") {
		t = t[i+len(": error: "):]
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "[strata]"))
	if r := []rune(t); len(r) > 300 {
		t = string(r[:299]) + "…"
	}
	return t, t != ""
}

func (s *Supervisor) logName() string {
	if s.cfg.LogFile != "" {
		return s.cfg.LogFile
	}
	return "the service's output"
}

// Python is the interpreter the server runs with.
func (s *Supervisor) Python() string { return s.cfg.Python }

// launch starts the server process and its output readers.
func (s *Supervisor) launch() (*process, error) {
	root := s.cfg.StrataRoot
	server := root + string(os.PathSeparator) + "serve" + string(os.PathSeparator) + "server.py"
	if _, err := os.Stat(server); err != nil {
		return nil, fmt.Errorf("%s is missing: is %s a Strata install? Pass --strata-root or run the companion's setup", server, root)
	}
	if _, err := os.Stat(s.cfg.Python); err != nil {
		return nil, fmt.Errorf("Strata's Python %s is missing: run Strata's setup in %s first", s.cfg.Python, root)
	}
	// Whose the install is decides whose rights the server gets: never the
	// service's own (root, SYSTEM) over a folder another account can change.
	// The config first: what it names (programs, cwd, env paths) counts
	// as much as the install's own files.
	sc, err := strataconfig.Read(s.cfg.ConfigPath)
	if err != nil {
		return nil, err
	}
	acct, err := account.ServerAccount(root, s.cfg.Python, loads(s.cfg.ConfigPath, sc)...)
	if err != nil {
		return nil, err
	}
	if err := s.endLeftover(); err != nil {
		return nil, err
	}
	port := s.cfg.Port
	if port == 0 {
		port = sc.Port() // the config's port, else Strata's 8080
	}
	// Exactly the command docs/strata.md gives; never --open (a service has no browser).
	cmd := exec.Command(s.cfg.Python, "serve/server.py", "--engine", "strata", "--config", s.cfg.ConfigPath, "--port", strconv.Itoa(port))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	cmd.Env = append(cmd.Env, "PYTHONUNBUFFERED=1") // lines as they happen, not at exit
	mark := newMark()
	cmd.Env = append(cmd.Env, EnvServerMark+"="+mark) // how the next run knows a leftover is ours
	// The relay Strata starts inherits the server's environment: with this
	// secret, and only then, its reports go into the service's state.
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, controlapi.EnvRelaySecret+"="+secret)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	// *os.File outputs: the child writes straight into the pipes, and Wait
	// does not wait for a grandchild that keeps them open.
	cmd.Stdout, cmd.Stderr = outW, errW
	setProcAttr(cmd)
	started, note, err := runAs(cmd, acct)
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	p := &process{cmd: cmd, port: port, started: time.Now(), exited: make(chan struct{}), apiKey: sc.APIKey(), vision: sc.Vision != nil, mark: mark,
		reload: make(chan struct{}, 1)}
	s.pub(fmt.Sprintf("starting the Strata server on port %d", port),
		events.ServerStartingDetails{Port: port, Config: s.cfg.ConfigPath})
	if note != "" {
		s.line(p, "supervisor", note)
	}
	// The previous run's strata-vision-* folder (Strata never removes it,
	// and its cached results can take hundreds of MB): gone now that its
	// server has exited; only folders that run made, and unchanged since.
	if prev := s.lastRun; prev != nil && prev.tmp != nil {
		select {
		case <-prev.exited:
			for _, d := range prev.tmp.RemoveLeftovers(prev.exitedAt) {
				s.line(p, "supervisor", "removed the previous run's image folder "+d)
			}
		default:
		}
	}
	p.tmp = stratatmp.Start(stratatmp.Dir(cmd.Env))
	p.uid = os.Geteuid()
	if acct != nil && acct.SID == "" {
		// the folders Strata makes, and its listening port, are that account's
		p.tmp.UID, p.uid = int(acct.UID), int(acct.UID)
	}
	s.lastRun = p
	err = cmd.Start()
	started()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("could not run %s: %v", s.cfg.Python, err)
	}
	p.pid = cmd.Process.Pid
	p.sys = attach(cmd)
	s.secretMu.Lock()
	s.secret = secret
	s.secretMu.Unlock()
	s.writePID(p)
	as := ""
	if acct != nil {
		as = " as " + acct.String()
	}
	s.line(p, "supervisor", fmt.Sprintf("started %s serve/server.py --engine strata --config %s --port %d (pid %d)%s", s.cfg.Python, s.cfg.ConfigPath, port, p.pid, as))
	p.readers.Add(2)
	go s.read(p, outR, "stdout")
	go s.read(p, errR, "stderr")
	go func() {
		cmd.Wait()
		// The server is gone: end what it left behind (an engine that
		// outlived a crash would hold the GPU and the port), which also
		// closes the pipes its children held.
		p.sys.kill(p.pid)
		done := make(chan struct{})
		go func() { p.readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			outR.Close()
			errR.Close()
		}
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	return p, nil
}

// StartedRelay reports whether secret is the one the running server was
// started with (controlapi.EnvRelaySecret): only its relay has it.
func (s *Supervisor) StartedRelay(secret string) bool {
	s.secretMu.Lock()
	cur := s.secret
	s.secretMu.Unlock()
	return cur != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(cur)) == 1
}

// newSecret is 32 random bytes in hex.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the relay's secret: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// finish releases p's process group / job and says how it ended.
func (s *Supervisor) finish(p *process) (int, string) {
	s.secretMu.Lock()
	s.secret = "" // its relay is gone with it
	s.secretMu.Unlock()
	p.sys.close()
	s.removePID(p)
	st := p.cmd.ProcessState
	if st == nil {
		return -1, "unknown"
	}
	code := st.ExitCode()
	how := "exit code " + strconv.Itoa(code)
	if code == -1 {
		how = st.String()
	}
	// A stop we asked for is not a failure, whatever code the server's
	// exit after Ctrl+Break (Windows) or SIGTERM carries: say so, so a
	// deliberate restart does not read as a crash in the log.
	switch {
	case p.stopping && !p.timedOut:
		s.line(p, "supervisor", "the server stopped as asked ("+how+")")
	case p.timedOut:
		s.line(p, "supervisor", "the server did not stop in time and was ended ("+how+")")
	default:
		s.line(p, "supervisor", "the server ended: "+how)
	}
	return code, how
}

// terminate begins a graceful stop of p's tree, and kills it after
// StopTimeout.
func (s *Supervisor) terminate(p *process) {
	if p.stopping && !p.timedOut {
		return
	}
	p.stopping = true
	s.line(p, "supervisor", "stopping the server")
	if err := p.sys.interrupt(p.pid); err != nil {
		s.cfg.Logf("asking the Strata server to stop: %v; killing it", err)
		p.sys.kill(p.pid)
		return
	}
	go func() {
		select {
		case <-p.exited:
		case <-time.After(s.cfg.StopTimeout):
			s.line(p, "supervisor", fmt.Sprintf("the server did not stop within %s; killing its process tree", s.cfg.StopTimeout))
			p.sys.kill(p.pid)
		}
	}()
}

// read takes p's output one line at a time.
func (s *Supervisor) read(p *process, r io.ReadCloser, stream string) {
	defer p.readers.Done()
	defer r.Close()
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := indexNL(buf)
			if i < 0 {
				break
			}
			s.line(p, stream, strings.TrimRight(string(buf[:i]), "\r"))
			buf = buf[i+1:]
		}
		if len(buf) > 64<<10 { // an endless line: cut it
			s.line(p, stream, string(buf))
			buf = buf[:0]
		}
		if err != nil {
			if len(buf) > 0 {
				s.line(p, stream, string(buf))
			}
			return
		}
	}
}

// DropReportEvery is how often a count of dropped log lines is published
// while lines keep being dropped (the first drop and the recovery are
// published at once).
var DropReportEvery = 10 * time.Second

// countDrop records the outcome of writing one line to the log file (outMu
// held) and returns the event to publish, if any.
func (s *Supervisor) countDrop(err error) *events.Event {
	now := time.Now()
	if err == nil {
		if !s.dropping {
			return nil
		}
		s.dropping, s.reported = false, now
		return &events.Event{Kind: events.ServerLogDropped,
			Message: fmt.Sprintf("writing the server log %s again; %d lines were lost", s.cfg.LogFile, s.dropped),
			Details: events.ToMap(events.ServerLogDroppedDetails{Dropped: s.dropped, File: s.cfg.LogFile, Writing: true})}
	}
	s.dropped++
	if s.dropping && now.Sub(s.reported) < DropReportEvery {
		return nil
	}
	s.dropping, s.reported = true, now
	return &events.Event{Kind: events.ServerLogDropped,
		Message: fmt.Sprintf("server output lines are not being written to %s: %v; %d lost so far (the last %d lines are kept in memory)", s.cfg.LogFile, fserr.Explain(err, s.cfg.LogFile), s.dropped, s.cfg.KeepLines),
		Details: events.ToMap(events.ServerLogDroppedDetails{Dropped: s.dropped, File: s.cfg.LogFile})}
}

// Dropped is how many output lines the log file refused so far.
func (s *Supervisor) Dropped() int {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.dropped
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// line records one output line and acts on what it says. It never waits
// on the log file or the console: they get the line through their queues.
func (s *Supervisor) line(p *process, stream, text string) {
	l := outLine{at: time.Now(), stream: stream, text: text}
	s.outMu.Lock()
	var drop *events.Event
	if s.logQ != nil {
		select {
		case s.logQ <- l:
		default:
			drop = s.countDrop(errLogBehind)
		}
	}
	if stream != "supervisor" {
		s.ring = append(s.ring, text)
		if len(s.ring) > s.cfg.KeepLines {
			s.ring = s.ring[len(s.ring)-s.cfg.KeepLines:]
		}
	}
	s.toConsole(l) // under outMu: the console gets the lines in the ring's order
	s.outMu.Unlock()
	if drop != nil {
		s.cfg.Events.Publish(*drop)
	}
	if stream == "supervisor" {
		return
	}

	if loglines.IsPortInUse(text) {
		p.flag(func(p *process) { p.portInUse = true })
	}
	words, isWords := lastWordsOf(text)
	p.mu.Lock()
	if isWords {
		p.lastWords = words
	}
	unloaded := p.unloaded
	p.mu.Unlock()
	e, ok := loglines.Parse(loglines.Stdout, text)
	if !ok {
		return
	}
	switch e.Kind {
	case events.ServerProgress, events.EncoderStarting, events.ExpertCache:
		if unloaded {
			// Strata's own start lines while unloaded (not a request's
			// log line, not the health poll's): a request is loading the
			// model again; the health poller follows it at the start's pace.
			select {
			case p.reload <- struct{}{}:
			default:
			}
		}
	}
	switch e.Kind {
	case events.ServerReady:
		if d := events.Get[events.ServerReadyDetails](e); d.Model != "" {
			s.announceReady(p, d) // nothing to ask: at once
		} else {
			go s.announceReady(p, d)
		}
		return
	case events.ServerProgress:
		p.mu.Lock()
		ready := p.isReady
		p.lastStrata = e.Message
		p.mu.Unlock()
		if ready {
			return // a running server's chatter is in the log, not the event stream
		}
	case events.ModelUnloaded:
		p.flag(func(p *process) { p.unloaded = true })
	case events.EncoderFailed:
		if d := events.Get[events.EncoderFailedDetails](e); d.Fatal {
			p.flag(func(p *process) { p.encoderFatal = d.Reason })
		}
	}
	s.cfg.Events.Publish(e)
}

// announceReady hands a ready line to the decision loop, with the model's
// name from /health when the line has none (a short ask, here and not in
// the loop, so a server slow to answer delays only its own announcement).
func (s *Supervisor) announceReady(p *process, details events.ServerReadyDetails) {
	// Never "ready" while another account answers on the port too (a
	// program on [::1] beside Strata's 127.0.0.1, say): clients would send
	// it the api_key. Wait until it is gone, or the server ends.
	if s.foreignNow(p) {
		go func() {
			if s.portIsOurs(p) {
				s.announceReady(p, details)
			}
		}()
		return
	}
	if details.Model == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		go func() {
			select {
			case <-p.exited:
				cancel()
			case <-ctx.Done():
			}
		}()
		var h health
		if getJSON(ctx, http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(p.port)+"/health", "", &h) == nil && h.Service == "strata" {
			details.Model = h.Model
			if h.MaxContext > 0 {
				details.Context = h.MaxContext
			}
		}
		cancel()
	}
	select {
	case s.ready <- readyMsg{proc: p, details: details}:
	default: // Run is gone or already has one
	}
}

// toConsole queues l for the console, if there is one; a console that does
// not keep up (a terminal paused with Ctrl-S) loses lines, the log file not.
func (s *Supervisor) toConsole(l outLine) {
	if s.consoleQ == nil {
		return
	}
	select {
	case s.consoleQ <- l:
	default:
	}
}

// writeOut writes what comes on q with write until stop, then what is
// still queued.
func (s *Supervisor) writeOut(q <-chan outLine, stop <-chan struct{}, write func(outLine)) {
	for {
		select {
		case l := <-q:
			write(l)
		case <-stop:
			for {
				select {
				case l := <-q:
					write(l)
				default:
					return
				}
			}
		}
	}
}

// writeLogLine writes one line to the log file and counts a refusal.
func (s *Supervisor) writeLogLine(l outLine) {
	_, err := fmt.Fprintf(s.log, "%s %-6s %s\n", l.at.Format("2006-01-02T15:04:05.000Z07:00"), l.stream, l.text)
	s.outMu.Lock()
	drop := s.countDrop(err)
	s.outMu.Unlock()
	if drop != nil {
		s.cfg.Events.Publish(*drop)
	}
}

func (s *Supervisor) writeConsoleLine(l outLine) {
	if l.stream == "supervisor" {
		fmt.Fprintln(s.cfg.Console, "strata-service: "+l.text)
	} else {
		fmt.Fprintln(s.cfg.Console, l.text)
	}
}
