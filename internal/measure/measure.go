// Package measure reads one trial picture where Strata's image encoder could
// run (this PC's CPU, this PC's GPU, the second PC through the relay) and
// measures what it costs there: the encoder's start (paid once) apart from
// the picture's time (paid for every picture). It has no GUI: the wizard's
// Pictures page, `strata-service probe --measure` and their tests drive it.
//
// A trial starts the very program the product would start, with the
// arguments it would pass (see plan.go): Strata's strata-vision for this
// PC's CPU and GPU, strata-vision-relay with the paired second PC's record
// for the second PC. It waits for READY (the start), sends one ENC of the
// standard 1024x1024 picture (StandardPicture), reads the OK line, and ends
// the program with QUIT. A Cancel or the bound ends it at once (its whole
// process tree); its temporary folder (the picture, the result, the relay's
// settings copy) is removed in every case.
package measure

import (
	"github.com/strata-companion/companion/internal/proctree"

	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// DefaultBound is how long a whole trial may take before it is stopped:
// a slow CPU reads one picture in about two minutes (111 s estimated for one
// thread), and a GPU's warm-up takes seconds.
const DefaultBound = 5 * time.Minute

// Kind says which bad case ended a trial (for tests and for the page to
// pick its words; Error's message is always the sentence to show).
type Kind string

const (
	KindNoEncoder   Kind = "no-encoder"   // strata-vision (or the relay) is not there
	KindNoProjector Kind = "no-projector" // no vision block, or its mmproj/model is missing
	KindNotPaired   Kind = "not-paired"   // no second PC in the settings
	KindNotPrepared Kind = "not-prepared" // paired, but prepare never ran
	KindNoGPU       Kind = "no-gpu"       // no NVIDIA GPU here that can run the encoder
	KindNoRoom      Kind = "no-room"      // the GPU has not the VRAM free (Strata holds it)
	KindDidNotStart Kind = "did-not-start"
	KindPicture     Kind = "picture"   // the encoder (or the second PC) answered ERR
	KindSecondPC    Kind = "second-pc" // the second PC could not be reached or did not answer
	KindTimeout     Kind = "timeout"
	KindCanceled    Kind = "canceled"
)

// Error is a trial that could not measure: Msg is a sentence for a person,
// saying what happened and what to do.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// KindOf is err's Kind ("" for an error that is not an *Error).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func problem(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, a...)}
}

// Trial is one prepared trial: what to start and how. Plan it with CPU, GPU
// or Remote (plan.go); tests may fill one directly.
type Trial struct {
	Placement settings.Placement
	// Device says in words where the picture is read ("this PC's CPU, 4
	// threads", "GPU 0 (NVIDIA GeForce RTX 4080)", "the second PC
	// gpu-laptop").
	Device string
	// Exe and Args are the program and its arguments, exactly as the product
	// starts it; Env is added to this process's environment; Dir is its
	// working folder ("" : this process's).
	Exe  string
	Args []string
	Env  []string
	Dir  string
	// Relay: Exe is strata-vision-relay, which says READY at once and
	// reaches the second PC on the first picture; RelaySettings is the
	// settings copy it is handed (vision: remote, the paired record).
	Relay         bool
	RelaySettings *settings.Settings
	Host          string
	// Bound is the whole trial's limit (0: DefaultBound).
	Bound time.Duration
	// StrataVersion is the installed engine's version, recorded with the result.
	StrataVersion string
	// TempDir is where the trial's folder is made ("": the system's).
	TempDir string
}

// Phase is what a trial is doing.
type Phase string

const (
	PhaseStarting Phase = "starting" // waiting for the encoder's READY
	PhaseReading  Phase = "reading"  // the picture is being read
	PhaseStopping Phase = "stopping"
)

// Progress is reported about ten times a second while a trial runs.
type Progress struct {
	Phase   Phase
	Elapsed time.Duration // since the trial started
	Bound   time.Duration
}

// Result is what a trial measured.
type Result struct {
	Placement settings.Placement `json:"placement"`
	Device    string             `json:"device"`
	Host      string             `json:"host,omitempty"`
	// StartSeconds is the encoder's start: to READY for a local encoder (a
	// GPU's warm-up included); through the relay, what the first picture
	// took more than the second (connecting, the agent's and the encoder's
	// start on the second PC). Paid once, not per picture.
	StartSeconds float64 `json:"start_seconds"`
	// PictureSeconds is one 1024x1024 picture from the ENC line to the OK
	// line, as Strata would wait for it (through the relay: the second
	// picture, the connection and the encoder already up).
	PictureSeconds float64 `json:"picture_seconds"`
	// EncoderMS is the encoder's own figure from its OK line.
	EncoderMS int `json:"encoder_ms"`
	// Tokens is the image tokens the picture became.
	Tokens int `json:"tokens"`
	// TrialSeconds is the whole trial, from start to the encoder's end.
	TrialSeconds  float64   `json:"trial_seconds"`
	When          time.Time `json:"when"`
	StrataVersion string    `json:"strata_version,omitempty"`
	// Note says something the figures alone do not (the encoder found no
	// GPU and read on the CPU).
	Note string `json:"note,omitempty"`
}

// Record is r as the companion settings keep it.
func (r *Result) Record() settings.Measurement {
	return settings.Measurement{PictureS: r.PictureSeconds, StartS: r.StartSeconds, When: settings.WhenString(r.When),
		StrataVersion: r.StrataVersion, Device: r.Device, Host: r.Host, Tokens: r.Tokens}
}

func round2(s float64) float64 { return math.Round(s*100) / 100 }

// Run runs t: start, one picture (two through the relay), stop. progress
// (may be nil) is called from another goroutine about every 100 ms and
// once more at each phase change. Cancelling ctx stops the encoder at once
// and returns a KindCanceled error; so does the bound, with KindTimeout.
func Run(ctx context.Context, t *Trial, progress func(Progress)) (*Result, error) {
	bound := t.Bound
	if bound <= 0 {
		bound = DefaultBound
	}
	if t.Exe == "" {
		return nil, problem(KindNoEncoder, "no encoder to start")
	}
	dir, err := os.MkdirTemp(t.TempDir, "strata-measure-")
	if err != nil {
		return nil, fmt.Errorf("cannot make a folder for the trial picture: %w", err)
	}
	defer os.RemoveAll(dir)
	img, base, err := writePicture(dir)
	if err != nil {
		return nil, err
	}
	env, err := trialEnv(t, dir)
	if err != nil {
		return nil, err
	}
	e, err := startEncoder(ctx, t, env, bound, progress)
	if err != nil {
		return nil, err
	}
	defer e.close()
	ready, err := e.waitReady()
	if err != nil {
		return nil, err
	}
	res, err := e.readPictures(img, base, ready)
	if err != nil {
		return nil, err
	}
	if strings.Contains(e.tail.all(), "failed to initialize CUDA") {
		res.Note = "the encoder found no usable GPU (CUDA did not start) and read the picture on the CPU: this is not a GPU figure; check the NVIDIA driver"
	}
	e.stop(true)
	res.When = time.Now()
	res.TrialSeconds = round2(time.Since(e.start).Seconds())
	return res, nil
}

// writePicture writes the standard picture in dir under Strata's own
// naming; base is its path less the extension, for the results.
func writePicture(dir string) (img, base string, err error) {
	pic := StandardPicture()
	sum := sha256.Sum256(pic)
	base = filepath.Join(dir, hex.EncodeToString(sum[:16]))
	img = base + ".img" // Strata's own naming
	if err := os.WriteFile(img, pic, 0o600); err != nil {
		return "", "", fmt.Errorf("cannot write the trial picture in %s: %w", dir, err)
	}
	return img, base, nil
}

// trialEnv is the encoder's environment. The relay reads its settings from
// a copy in dir, and its reports go nowhere: a trial is no picture of
// Strata's, and the service's state must not count it.
func trialEnv(t *Trial, dir string) ([]string, error) {
	env := append(os.Environ(), t.Env...)
	if !t.Relay {
		return env, nil
	}
	st := t.RelaySettings
	if st == nil {
		return nil, problem(KindNotPaired, "no second PC is paired yet: pair one on the second-PC page first")
	}
	sf := filepath.Join(dir, "settings.json")
	if err := st.Save(sf); err != nil {
		return nil, fmt.Errorf("cannot write the relay's settings for the trial: %w", err)
	}
	return append(env, "STRATA_COMPANION_SETTINGS="+sf, "STRATA_COMPANION_HOME="+filepath.Join(dir, "home")), nil
}

// encoderRun is the trial's running encoder: its input, its output lines,
// its end, the bound, and the phase progress reports.
type encoderRun struct {
	ctx      context.Context
	t        *Trial
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *os.File
	tail     *tailWriter
	lines    chan string
	exited   chan struct{}
	tickDone chan struct{}
	deadline *time.Timer
	bound    time.Duration
	start    time.Time
	progress func(Progress)

	phaseMu sync.Mutex
	phase   Phase
}

// startEncoder starts the encoder, reports PhaseStarting at once and then
// about every 100 ms, and starts the bound.
func startEncoder(ctx context.Context, t *Trial, env []string, bound time.Duration, progress func(Progress)) (*encoderRun, error) {
	cmd := exec.Command(t.Exe, t.Args...)
	cmd.Dir, cmd.Env = t.Dir, env
	proctree.Prepare(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Its stdout through a pipe of our own: Wait would close a StdoutPipe
	// as soon as the encoder exits, losing the last line it printed (the
	// "ERR ..." of a failed start).
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	e := &encoderRun{ctx: ctx, t: t, cmd: cmd, stdin: stdin, stdout: stdout, tail: &tailWriter{}, bound: bound, progress: progress,
		lines: make(chan string, 4), exited: make(chan struct{}), tickDone: make(chan struct{}), phase: PhaseStarting}
	cmd.Stderr = e.tail
	e.start = time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		stdout.Close()
		return nil, problem(KindNoEncoder, "the encoder %s could not be started: %v", t.Exe, err)
	}
	e.report() // PhaseStarting, at once
	go func() { _ = cmd.Wait(); close(e.exited) }()
	go e.readLines()
	go e.tick()
	e.deadline = time.NewTimer(bound)
	return e, nil
}

func (e *encoderRun) readLines() {
	sc := bufio.NewScanner(e.stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e.lines <- strings.TrimRight(sc.Text(), "\r")
	}
	close(e.lines)
}

func (e *encoderRun) tick() {
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-e.tickDone:
			return
		case <-tk.C:
			e.report()
		}
	}
}

// close releases what the run holds once it is over.
func (e *encoderRun) close() {
	e.deadline.Stop()
	e.stdout.Close()
}

func (e *encoderRun) report() {
	if e.progress == nil {
		return
	}
	e.phaseMu.Lock()
	p := e.phase
	e.phaseMu.Unlock()
	e.progress(Progress{Phase: p, Elapsed: time.Since(e.start), Bound: e.bound})
}

func (e *encoderRun) setPhase(p Phase) {
	setPhaseQuiet(&e.phaseMu, &e.phase, p)
	e.report()
}

// stop ends the encoder: QUIT and the end of its input, a short grace
// (the relay ends its agent on the second PC in well under a second),
// then its whole process tree is killed. It always waits for the exit.
// It is called once.
func (e *encoderRun) stop(graceful bool) {
	close(e.tickDone)
	setPhaseQuiet(&e.phaseMu, &e.phase, PhaseStopping)
	_, _ = io.WriteString(e.stdin, "QUIT\n")
	_ = e.stdin.Close()
	grace := 200 * time.Millisecond
	if e.t.Relay {
		grace = 1500 * time.Millisecond
	}
	if !graceful {
		grace /= 2
	}
	select {
	case <-e.exited:
	case <-time.After(grace):
		proctree.Kill(e.cmd)
		<-e.exited
	}
	go func() {
		for range e.lines { // what it printed last, unread: let the reader end
		}
	}()
}

// next waits for one line, the bound, Cancel or the encoder's end.
func (e *encoderRun) next() (string, error) {
	select {
	case l, ok := <-e.lines:
		if !ok {
			<-e.exited
			return "", io.EOF
		}
		return l, nil
	case <-e.ctx.Done():
		return "", e.ctx.Err()
	case <-e.deadline.C:
		return "", errBound
	}
}

// fail stops the encoder and says why the trial ended while doing what.
func (e *encoderRun) fail(err error, what string) error {
	e.stop(false)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return problem(KindCanceled, "the trial was cancelled %s: nothing was measured, and the encoder was stopped", what)
	case errors.Is(err, errBound):
		return problem(KindTimeout, "the trial was stopped after %s %s (the longest a trial may take): %s", words(e.bound), what, slowAdvice(e.t))
	}
	return err
}

// waitReady waits for the encoder's READY and returns how long it took.
func (e *encoderRun) waitReady() (time.Duration, error) {
	first, err := e.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			e.stop(false)
			return 0, problem(KindDidNotStart, "the encoder ended before it was ready%s", said(e.tail.last()))
		}
		return 0, e.fail(err, "while the encoder was starting")
	}
	if !strings.HasPrefix(first, "READY") {
		e.stop(false)
		msg := strings.TrimSpace(strings.TrimPrefix(first, "ERR"))
		return 0, problem(KindDidNotStart, "the encoder did not start: %s", msg)
	}
	ready := time.Since(e.start)
	e.setPhase(PhaseReading)
	return ready, nil
}

// readPictures reads the picture img (to base.sve) and measures it.
// Through the relay the first picture paid for the connection and the
// second PC's encoder start; a second one (to base-2.sve) is what every
// later picture costs.
func (e *encoderRun) readPictures(img, base string, ready time.Duration) (*Result, error) {
	t := e.t
	took, line, err := e.encode(img, base+".sve")
	if err != nil {
		return nil, e.fail(err, "while the picture was read")
	}
	res := &Result{Placement: t.Placement, Device: t.Device, Host: t.Host, StrataVersion: t.StrataVersion}
	if err := parseOK(line, res, t); err != nil {
		e.stop(false)
		return nil, err
	}
	res.StartSeconds, res.PictureSeconds = round2(ready.Seconds()), round2(took.Seconds())
	if !t.Relay {
		return res, nil
	}
	took2, line2, err := e.encode(img, base+"-2.sve")
	if err != nil {
		return nil, e.fail(err, "while the second picture was read")
	}
	if err := parseOK(line2, res, t); err != nil {
		e.stop(false)
		return nil, err
	}
	res.PictureSeconds = round2(took2.Seconds())
	res.StartSeconds = round2((ready + max(0, took-took2)).Seconds())
	return res, nil
}

// encode sends one ENC of img (its result to out) and waits for its answer.
func (e *encoderRun) encode(img, out string) (time.Duration, string, error) {
	t0 := time.Now()
	if _, err := io.WriteString(e.stdin, "ENC "+img+" "+out+"\n"); err != nil {
		return 0, "", problem(KindDidNotStart, "the encoder stopped before the picture%s", said(e.tail.last()))
	}
	l, err := e.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, "", problem(KindPicture, "the encoder stopped while reading the picture%s", said(e.tail.last()))
		}
		return 0, "", err
	}
	return time.Since(t0), l, nil
}

func setPhaseQuiet(mu *sync.Mutex, p *Phase, v Phase) { mu.Lock(); *p = v; mu.Unlock() }

var errBound = errors.New("bound")

func parseOK(line string, res *Result, t *Trial) error {
	f := strings.Fields(line)
	if len(f) >= 1 && f[0] == "ERR" {
		msg := strings.TrimSpace(strings.TrimPrefix(line, "ERR"))
		if t.Relay {
			// The relay's words are for Strata's users ("...; pictures are
			// unavailable, text still works"); a trial says only the reason.
			msg = strings.TrimSuffix(msg, "; pictures are unavailable, text still works")
			return problem(KindSecondPC, "the second PC did not read the trial picture: %s", msg)
		}
		return problem(KindPicture, "the encoder could not read the trial picture: %s", msg)
	}
	if len(f) < 5 || f[0] != "OK" {
		return problem(KindPicture, "the encoder answered %q instead of OK", line)
	}
	res.Tokens, _ = strconv.Atoi(f[1])
	res.EncoderMS, _ = strconv.Atoi(f[4])
	return nil
}

func said(last string) string {
	if last == "" {
		return ""
	}
	return "; it said: " + last
}

func slowAdvice(t *Trial) string {
	if t.Relay {
		return "the second PC or the link to it is too slow, or the second PC stopped answering; check it is on, then try again"
	}
	return "this device is too slow for pictures to be practical, or the encoder hung; try again, or choose another place"
}

// words says a duration for a person ("5 minutes", "90 seconds").
func words(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		if d == time.Minute {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	case d == time.Second:
		return "1 second"
	case d >= time.Second:
		return fmt.Sprintf("%g seconds", math.Round(d.Seconds()*10)/10)
	}
	return d.String()
}

// tailWriter keeps the encoder's stderr: its last line for messages, and
// (bounded) the whole for the CUDA line.
type tailWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > 64<<10 {
		w.b = append([]byte(nil), w.b[len(w.b)-32<<10:]...)
	}
	return len(p), nil
}

func (w *tailWriter) all() string { w.mu.Lock(); defer w.mu.Unlock(); return string(w.b) }

func (w *tailWriter) last() string {
	ls := strings.Split(strings.TrimSpace(w.all()), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}
