// Package agent is the second PC's side of the relay: "strata-vision-relay
// agent", started by the relay over ssh, serving frames (internal/framing) on
// the session's stdin/stdout. It runs strata-vision (at once, or on the first
// picture when an idle stop is set, stopping it after that idle time to give
// the PC its VRAM back), writes each picture into a private scratch folder,
// streams the .sve back and deletes both, reports GPU memory and the
// encoder's state, receives files for `remote prepare`, and ends the encoder
// when the session ends, or when the relay falls silent (its PC died).
package agent

import (
	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/encoderproc"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/framing/bounds"
	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/version"
)

// ConfigFrom is the agent's Config for its command line (agentcmd's one
// definition, as the relay built it and the gate admitted it).
func ConfigFrom(a agentcmd.Agent) Config {
	c := Config{Encoder: a.Encoder, Mmproj: a.Mmproj, Model: a.Model, GPU: a.GPU, Threads: a.Threads,
		MaxTokens: a.MaxTokens, ExtraArgs: a.EncoderArgs, Dir: a.Dir, ScratchParent: a.Scratch, InstallSHA256: a.InstallSHA256,
		IdleStop: time.Duration(a.IdleStopS) * time.Second, CUDADevice: -1}
	if a.CUDADevice != nil {
		c.CUDADevice, c.CUDADeviceSet = *a.CUDADevice, true
	}
	return c
}

// Config is what the agent's command line says.
type Config struct {
	Encoder   string // strata-vision; "" serves files and status only (prepare)
	Mmproj    string
	Model     string
	GPU       bool
	Threads   int
	MaxTokens int
	// CUDADevice is the GPU the encoder runs on, by nvidia-smi index (-1 or
	// unset with CUDADeviceSet false: CUDA's own choice), set the way Strata's
	// vision_env sets it (CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA_VISIBLE_DEVICES).
	CUDADevice    int
	CUDADeviceSet bool
	// ExtraArgs go to strata-vision after the others (arguments Strata
	// passed that the relay does not know; one the encoder refuses is
	// dropped, with a note).
	ExtraArgs []string
	// BeatEvery is how often a Beat frame is sent while the agent works
	// (default bounds.Beat, 1 s: the relay gives up an agent that misses
	// three, bounds.HungAgent).
	BeatEvery time.Duration
	// IdleStop stops the encoder after this long without a picture; 0 keeps
	// it running from the session's start to its end.
	IdleStop time.Duration
	// Dir receives uploaded files (default: the agent executable's folder).
	Dir string
	// ScratchParent holds the private scratch folder (default: the OS temp folder).
	ScratchParent string
	// ReadyTimeout bounds the encoder's start (warm-up included). Default
	// bounds.EncoderStart (300 s, as Strata's own STRATA_VISION_READY_S).
	ReadyTimeout time.Duration
	// EncodeTimeout bounds one picture. Default bounds.Encode (120 s).
	EncodeTimeout time.Duration
	// Silence ends the agent when no frame came from the relay for this long
	// (it pings every bounds.Ping). Default bounds.AgentSilence (60 s).
	Silence time.Duration
	// Log receives diagnostics and the encoder's stderr (the ssh session's
	// stderr, which the relay forwards to Strata's log).
	Log io.Writer
	// NvidiaSMI overrides the nvidia-smi program (tests); "" finds it as
	// the probe does (internal/nvsmi: PATH, then where drivers put it).
	NvidiaSMI string
	// InstallSHA256 are the sha256 sums of the programs this session may
	// install (prepare's checksummed install of strata-vision and its
	// libraries, announced on the agent's command line). Any other upload
	// that is a program, by name or mode, is refused; the agent's own
	// program is never replaced through it.
	InstallSHA256 []string
}

func (c *Config) defaults() {
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = bounds.EncoderStart
	}
	if c.EncodeTimeout <= 0 {
		c.EncodeTimeout = bounds.Encode
	}
	if c.Silence <= 0 {
		c.Silence = bounds.AgentSilence
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Dir == "" {
		if exe, err := os.Executable(); err == nil {
			c.Dir = filepath.Dir(exe)
		}
	}
	if c.ScratchParent == "" {
		c.ScratchParent = os.TempDir()
	}
	if c.BeatEvery <= 0 {
		c.BeatEvery = bounds.Beat
	}
}

// encoderEnv is the encoder's environment: the agent's, with CUDA numbering
// cards in PCI bus order, as nvidia-smi does (always: CUDA's own default
// puts the fastest card first, so without it "card 0" could be another card
// than the one the agent measures), and the chosen GPU as the only one CUDA
// shows it.
func (c *Config) encoderEnv() []string {
	env := append(os.Environ(), "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	if c.CUDADeviceSet && c.CUDADevice >= 0 {
		env = append(env, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(c.CUDADevice))
	}
	return env
}

// gpuIndex is the card the encoder runs on, by nvidia-smi index: the chosen
// one, else the first in PCI bus order (what CUDA shows first with
// encoderEnv's order).
func (c *Config) gpuIndex() int {
	if c.CUDADeviceSet && c.CUDADevice >= 0 {
		return c.CUDADevice
	}
	return 0
}

// EncoderArgs is the strata-vision command line, as Strata itself builds it.
func (c *Config) EncoderArgs() []string {
	args := []string{"--mmproj", c.Mmproj, "--model", c.Model}
	if c.GPU {
		args = append(args, "--gpu")
	}
	if c.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(c.Threads))
	}
	if c.MaxTokens > 0 {
		args = append(args, "--max-tokens", strconv.Itoa(c.MaxTokens))
	}
	return append(args, c.ExtraArgs...)
}

// ScratchPrefix starts every scratch folder's name; the pid follows, so a
// later agent can remove the folder of one that was killed.
const ScratchPrefix = "strata-vision-relay-"

type agent struct {
	cfg      Config
	fw       *framing.Writer
	scratch  string
	enc      *encoderproc.Encoder
	state    string // stopped, running, failed
	lastErr  string
	lastUse  time.Time
	pictures int
	put      *putState
	// putRefused: the upload begun last was refused; its data and end are
	// dropped without another reply.
	putRefused bool
	where      *framing.Where // where the running encoder reads pictures
	// inputEnded is closed when the relay's side of the session ended (its
	// input hit EOF or broke): a picture in flight is abandoned at once and
	// its encoder killed, so a relay told to QUIT leaves nothing running.
	inputEnded chan struct{}
	endOnce    sync.Once
	// gpus reads nvidia-smi off the frame loop (gpus.go).
	gpus *nvsmi.Watcher
}

type putState struct {
	hdr  framing.PutHeader
	f    *os.File
	path string
}

// Serve runs one session: frames in on in, out on out, until in ends, ctx
// ends or the relay falls silent. It always stops the encoder and removes its
// scratch folder before returning.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	cfg.defaults()
	a := &agent{cfg: cfg, fw: framing.NewWriter(out), state: "stopped", inputEnded: make(chan struct{}),
		gpus: nvsmi.NewWatcher(cfg.NvidiaSMI, gpuReadTimeout)}
	a.gpus.Read(time.Time{}, 0) // a first reading, ready by the relay's first status
	a.cleanStaleScratch()
	var err error
	if a.scratch, err = os.MkdirTemp(cfg.ScratchParent, ScratchPrefix+strconv.Itoa(os.Getpid())+"-"); err != nil {
		return fmt.Errorf("cannot make a scratch folder in %s: %w", cfg.ScratchParent, err)
	}
	defer removeScratch(a.scratch)
	defer holdScratch(a.scratch)()
	defer a.stopEncoder()
	defer a.abortPut()

	info := framing.Info{Proto: framing.Version, Version: version.Version, OS: runtime.GOOS, Arch: runtime.GOARCH, PID: os.Getpid(), Dir: cfg.Dir,
		BeatMS: int(cfg.BeatEvery / time.Millisecond)}
	if cfg.Mmproj != "" {
		info.NEmbd, _ = gguf.NEmbd(cfg.Mmproj)
	}
	if err := a.fw.WriteJSON(framing.Hello, info); err != nil {
		return err
	}

	frames := make(chan inFrame, 1)
	stopRead := make(chan struct{})
	defer close(stopRead)
	go a.readFrames(framing.NewReader(in), frames, stopRead)

	if cfg.Encoder != "" && cfg.IdleStop == 0 {
		stop := a.beating(0, framing.PhaseStarting)
		a.ensureEncoder(false) // keep-running mode: warm up before the first picture
		stop()
	}
	silence := time.NewTimer(cfg.Silence)
	defer silence.Stop()
	// The idle stop is a timer armed for the moment it is due (not a
	// ticker checking every second): an idle agent wakes only for the
	// relay's pings.
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	armIdle := func() {
		if a.enc != nil && a.cfg.IdleStop > 0 {
			idle.Reset(max(time.Until(a.lastUse.Add(a.cfg.IdleStop)), 0))
		} else {
			idle.Stop()
		}
	}
	armIdle()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-silence.C:
			fmt.Fprintf(cfg.Log, "strata-vision-relay agent: nothing from the relay for %s; its PC is gone, ending the session\n", cfg.Silence)
			return errors.New("the relay fell silent")
		case <-idle.C:
			// a.cfg: the relay may change the idle stop (SetIdle).
			if a.enc != nil && a.cfg.IdleStop > 0 && time.Since(a.lastUse) >= a.cfg.IdleStop {
				a.stopEncoder()
				fmt.Fprintf(cfg.Log, "strata-vision-relay agent: encoder stopped after %s without pictures\n", a.cfg.IdleStop)
				a.event(framing.AgentEvent{Kind: "idle_stopped", IdleS: int(a.cfg.IdleStop / time.Second)})
			}
			armIdle()
		case f := <-frames:
			if f.err != nil && f.t != framing.PictureEnd {
				if f.err == io.EOF {
					return nil // the relay closed the session: a clean end
				}
				return f.err
			}
			var err error
			if f.t == framing.PictureEnd {
				err = a.encodeReceived(f.id, f.path, f.err)
			} else {
				err = a.handle(f.t, f.p)
			}
			if err != nil {
				if err == io.EOF {
					return nil // the session ended during a picture
				}
				return err
			}
			silence.Reset(cfg.Silence)
			armIdle() // a picture, a wake or a new idle stop moves it
		}
	}
}

func (a *agent) event(e framing.AgentEvent) { a.fw.WriteJSON(framing.Event, e) }

// beating sends a Beat every BeatEvery until the returned func is called:
// the relay's proof that a busy agent is alive (a stopped or frozen one
// sends nothing, and the relay gives it up within seconds).
func (a *agent) beating(id uint32, phase string) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(a.cfg.BeatEvery)
		defer t.Stop()
		beat := framing.BeatInfo{ID: id, Phase: phase}
		a.fw.WriteJSON(framing.Beat, beat)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if a.fw.WriteJSON(framing.Beat, beat) != nil {
					return
				}
			}
		}
	}()
	// Not waited for: a beat stuck in a write (the relay stopped reading)
	// must not hold the agent; the writer's lock keeps frames whole, and a
	// late beat about a finished picture is ignored by the relay.
	return func() { close(stop) }
}

func (a *agent) fail(id uint32, msg string) error {
	return a.fw.Write(framing.Error, framing.PutID(id), []byte(msg))
}

func (a *agent) handle(t framing.Type, p []byte) error {
	switch t {
	case framing.Ping:
		return a.fw.Write(framing.Pong, p)
	case framing.Encode:
		id, img, err := framing.SplitID(p)
		if err != nil {
			return err
		}
		return a.encode(id, img)
	case framing.SetIdle:
		var q framing.IdleSetting
		if err := json.Unmarshal(p, &q); err != nil || q.IdleStopS < 0 {
			return a.fail(0, "bad idle-stop setting")
		}
		// Applied from now on: the idle check runs every second, and a
		// stopped encoder starts on the next picture.
		a.cfg.IdleStop = time.Duration(q.IdleStopS) * time.Second
		return nil
	case framing.AskStatus:
		return a.fw.WriteJSON(framing.StatusReply, a.status())
	case framing.Wake:
		if a.cfg.Encoder == "" {
			return a.fail(0, "this agent was started without --encoder")
		}
		a.ensureEncoder(true)
		return a.fw.WriteJSON(framing.StatusReply, a.status())
	case framing.Stat:
		var q struct{ Name string }
		if err := json.Unmarshal(p, &q); err != nil {
			return a.fail(0, "bad stat request")
		}
		fi, err := a.stat(q.Name)
		if err != nil {
			return a.fail(0, err.Error())
		}
		return a.fw.WriteJSON(framing.StatReply, fi)
	case framing.PutBegin:
		return a.putBegin(p)
	case framing.PutData:
		if a.put == nil && a.putRefused {
			return nil // the rest of a refused upload (its Error was sent)
		}
		if a.put == nil {
			return a.fail(0, "file data without a file")
		}
		if _, err := a.put.f.Write(p); err != nil {
			a.abortPut()
			return a.fail(0, fmt.Sprintf("writing on the second PC failed: %v (is its disk full?)", err))
		}
		return nil
	case framing.PutEnd:
		if a.put == nil && a.putRefused {
			a.putRefused = false
			return nil
		}
		return a.putEnd()
	}
	return a.fail(0, fmt.Sprintf("unknown frame type %q (relay and agent versions differ? run `strata-service remote prepare`)", byte(t)))
}

// ensureEncoder starts the encoder if it is not running. woke says whether
// a picture (or a Wake) asked for it, which is reported as a wake.
func (a *agent) ensureEncoder(woke bool) error {
	if a.enc != nil && a.enc.Alive() {
		return nil
	}
	if a.enc != nil {
		a.stopEncoder() // reap the one that died
		a.state = "failed"
	}
	t0 := time.Now()
	var before gpuReading
	if a.cfg.GPU {
		before = a.readGPUs(t0, observeWait)
	}
	enc, err := encoderproc.Start(a.cfg.Encoder, a.cfg.EncoderArgs(), a.cfg.encoderEnv(), a.cfg.Log, a.cfg.ReadyTimeout)
	if err != nil {
		a.state = "failed"
		a.lastErr = fmt.Sprintf("the encoder on the second PC did not start: %v", err)
		fmt.Fprintln(a.cfg.Log, "strata-vision-relay agent: "+a.lastErr)
		a.event(framing.AgentEvent{Kind: "failed", Message: a.lastErr})
		return errors.New(a.lastErr)
	}
	a.enc, a.state, a.lastErr, a.lastUse = enc, "running", "", time.Now()
	ms := time.Since(t0).Milliseconds()
	fmt.Fprintf(a.cfg.Log, "strata-vision-relay agent: encoder started in %d ms (READY %d)\n", ms, enc.NEmbd())
	kind := "started"
	if woke {
		kind = "woke"
	}
	w := a.observe(enc, before)
	a.where = &w
	a.event(framing.AgentEvent{Kind: kind, StartMS: ms, NEmbd: enc.NEmbd(), Where: &w})
	return nil
}

// observe says where the encoder just started reads pictures: its own start
// line, and on a GPU the card (the one CUDA shows it first: gpuIndex) and
// the VRAM it took there, from nvidia-smi before and after its start.
func (a *agent) observe(enc *encoderproc.Encoder, before gpuReading) framing.Where {
	w := enc.Where(a.cfg.GPU)
	if w.Device != "gpu" {
		if w.Expected == "gpu" && w.Reason == "" && before.fresh && before.err != nil && len(before.gpus) == 0 {
			_, what, _ := before.err.Explain()
			w.Reason = "on the second PC, " + what
		}
		return w
	}
	after := a.readGPUs(time.Now(), observeWait)
	return measure(w, a.cfg.gpuIndex(), before, after)
}

func (a *agent) stopEncoder() {
	if a.enc == nil {
		return
	}
	a.enc.Stop(bounds.EncoderQuit)
	a.enc = nil
	if a.state == "running" {
		a.state = "stopped"
	}
}

func (a *agent) encode(id uint32, img []byte) error {
	if a.cfg.Encoder == "" {
		return a.fail(id, "this agent was started without --encoder")
	}
	stop := a.beating(id, framing.PhaseStarting)
	err := a.ensureEncoder(true)
	stop()
	if err != nil {
		return a.fail(id, err.Error())
	}
	a.lastUse = time.Now()
	defer func() { a.lastUse = time.Now() }()
	in := a.picturePath(id)
	if err := os.WriteFile(in, img, 0o600); err != nil {
		os.Remove(in)
		return a.fail(id, fmt.Sprintf("cannot write the picture on the second PC: %v (is its disk full?)", err))
	}
	return a.encodeFile(id, in)
}

// encodeReceived encodes a picture the reader streamed into the scratch
// folder (werr: it could not be written there).
func (a *agent) encodeReceived(id uint32, in string, werr error) error {
	if werr != nil {
		os.Remove(in)
		return a.fail(id, werr.Error())
	}
	if a.cfg.Encoder == "" {
		os.Remove(in)
		return a.fail(id, "this agent was started without --encoder")
	}
	stop := a.beating(id, framing.PhaseStarting)
	err := a.ensureEncoder(true)
	stop()
	if err != nil {
		os.Remove(in)
		return a.fail(id, err.Error())
	}
	a.lastUse = time.Now()
	defer func() { a.lastUse = time.Now() }()
	return a.encodeFile(id, in)
}

// encodeFile runs the encoder on the picture at in (in the scratch folder)
// and streams the .sve back; both files are removed afterwards.
func (a *agent) encodeFile(id uint32, in string) error {
	out := strings.TrimSuffix(in, ".img") + ".sve"
	defer os.Remove(in)
	defer os.Remove(out)
	stop := a.beating(id, framing.PhaseEncoding)
	line, err := a.enc.Request("ENC "+in+" "+out, a.cfg.EncodeTimeout, a.inputEnded)
	stop()
	if errors.Is(err, encoderproc.ErrCancelled) {
		// The relay is gone or stopping: no one waits for this picture.
		fmt.Fprintln(a.cfg.Log, "strata-vision-relay agent: the relay ended the session during a picture; stopping the encoder")
		a.enc.Stop(0)
		a.enc = nil
		a.state = "stopped"
		return io.EOF
	}
	if err != nil {
		msg := err.Error()
		if errors.Is(err, encoderproc.ErrStopped) {
			msg = "the encoder on the second PC stopped"
			if l := a.enc.Tail(); l != "" {
				msg += " (" + l + ")"
			}
			msg += "; the next picture starts it again"
		}
		a.stopEncoder()
		a.state, a.lastErr = "failed", msg
		a.event(framing.AgentEvent{Kind: "failed", Message: msg})
		return a.fail(id, msg)
	}
	switch {
	case strings.HasPrefix(line, "OK "):
		f, err := os.Open(out)
		var st os.FileInfo
		if err == nil {
			st, err = f.Stat()
		}
		if err != nil {
			return a.fail(id, fmt.Sprintf("the encoder said %q but its output is unreadable: %v", line, err))
		}
		defer f.Close()
		a.pictures++
		// Streamed from the file: a failure inside the frame breaks the
		// stream, so it ends the session (the relay reports it).
		return a.fw.WriteStream(framing.Result, framing.ResultHeader(id, line), f, st.Size())
	case strings.HasPrefix(line, "ERR"):
		return a.fail(id, strings.TrimSpace(strings.TrimPrefix(line, "ERR")))
	}
	return a.fail(id, fmt.Sprintf("the encoder answered %q", line))
}

func (a *agent) status() framing.StatusInfo {
	s := framing.StatusInfo{Encoder: a.state, Pictures: a.pictures, Error: a.lastErr, IdleStopS: int(a.cfg.IdleStop / time.Second)}
	if a.enc != nil && a.enc.Alive() {
		s.PID, s.NEmbd, s.Where = a.enc.PID(), a.enc.NEmbd(), a.where
	}
	if ents, err := os.ReadDir(a.scratch); err == nil {
		for _, e := range ents {
			if e.Name() != scratchOwner {
				s.ScratchFiles++
			}
		}
	}
	r := a.readGPUs(time.Time{}, statusWait)
	s.GPUs = toFraming(r.gpus)
	switch {
	case r.err != nil:
		_, s.GPUProblem, _ = r.err.Explain()
	case !r.fresh:
		s.GPUProblem = fmt.Sprintf("nvidia-smi did not answer within %s; these figures are older", statusWait)
	}
	return s
}

// removeScratch removes the session's scratch folder; on Windows a file the
// encoder just had open (it is ended asynchronously) may refuse deletion for
// a moment, so it tries again for up to 3 s.
func removeScratch(dir string) {
	for i := 0; i < 30; i++ {
		if err := removeTree(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeTree is os.RemoveAll with a plain file-by-file fallback: Go's
// RemoveAll on Windows deletes with POSIX semantics
// (FILE_DISPOSITION_INFORMATION_EX), which Windows before 10 1709 and wine 8
// refuse ("Invalid function"); DeleteFile and RemoveDirectory work there.
//
// It touches only a folder this agent's account owns, never through a
// link (issue 32: another local account's folder, or a link it planted,
// made the fallback read and delete the agent's user's files): each folder
// is looked at (Lstat) right before it is read, and the fallback goes into
// nothing but the account's own real folders.
func removeTree(dir string) error {
	if fi, err := os.Lstat(dir); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	} else if !ownRealDir(fi) {
		return fmt.Errorf("%s is not a folder of this account (a link, or another account's): left alone", dir)
	}
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	if fi, lerr := os.Lstat(dir); lerr != nil || !ownRealDir(fi) {
		return err // replaced meanwhile: not read
	}
	ents, rerr := os.ReadDir(dir)
	if rerr != nil {
		if os.IsNotExist(rerr) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
			removeTree(p) // checks it is ours and no link
		} else {
			os.Remove(p) // a file or a link itself, never what it points to
		}
	}
	return os.Remove(dir)
}

// cleanStaleScratch removes scratch folders left by agents that were killed.
func (a *agent) cleanStaleScratch() {
	ents, _ := os.ReadDir(a.cfg.ScratchParent)
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, ScratchPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, ScratchPrefix)
		i := strings.IndexByte(rest, '-')
		if i < 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || scratchOwned(filepath.Join(a.cfg.ScratchParent, name), pid) {
			continue
		}
		// Another account's folder (or a link) by that name is not ours
		// to clean, whatever its name says.
		if fi, err := os.Lstat(filepath.Join(a.cfg.ScratchParent, name)); err != nil || !ownRealDir(fi) {
			continue
		}
		removeTree(filepath.Join(a.cfg.ScratchParent, name))
	}
}

// validName accepts a plain file name: uploads never leave the agent's folder.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, `/\:`) && filepath.Base(n) == n
}

// SelfName asks Stat about the agent's own executable.
const SelfName = "@self"

func (a *agent) stat(name string) (framing.FileInfo, error) {
	var path string
	switch {
	case name == SelfName:
		exe, err := os.Executable()
		if err != nil {
			return framing.FileInfo{}, err
		}
		path = exe
	case filepath.IsAbs(name):
		// Read-only, and only inside the agent's own folder: the size
		// and sha256 of any other file the account can read are not the
		// relay's business.
		if !inside(a.cfg.Dir, name) {
			return framing.FileInfo{}, fmt.Errorf("%q is outside the agent's folder %s; the agent answers only about its own files", name, a.cfg.Dir)
		}
		path = name
	case validName(name):
		path = filepath.Join(a.cfg.Dir, name)
	default:
		return framing.FileInfo{}, fmt.Errorf("%q is not a plain file name", name)
	}
	fi := framing.FileInfo{Name: name, Path: path}
	if st, err := os.Stat(path + ".part"); err == nil && validName(name) {
		fi.PartialSize = st.Size()
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return fi, nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return fi, err
	}
	fi.Exists, fi.Size, fi.SHA256 = true, st.Size(), sum
	return fi, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (a *agent) putBegin(p []byte) error {
	a.abortPut()
	var h framing.PutHeader
	if err := json.Unmarshal(p, &h); err != nil || !validName(h.Name) || h.Offset < 0 || h.Offset > h.Size {
		return a.fail(0, "bad upload request")
	}
	a.putRefused = false
	if why := a.refuseUpload(h); why != "" {
		a.putRefused = true
		return a.fail(0, why)
	}
	if err := os.MkdirAll(a.cfg.Dir, 0o755); err != nil {
		return a.fail(0, fmt.Sprintf("cannot create %s on the second PC: %v", a.cfg.Dir, err))
	}
	path := filepath.Join(a.cfg.Dir, h.Name)
	f, err := os.OpenFile(path+".part", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return a.fail(0, fmt.Sprintf("cannot write %s on the second PC: %v", path, err))
	}
	// Resume exactly where the relay says; drop anything past it.
	if st, _ := f.Stat(); st == nil || st.Size() < h.Offset {
		f.Close()
		return a.fail(0, "the partial upload on the second PC is shorter than the resume offset")
	}
	if err := f.Truncate(h.Offset); err != nil {
		f.Close()
		return a.fail(0, err.Error())
	}
	if _, err := f.Seek(h.Offset, io.SeekStart); err != nil {
		f.Close()
		return a.fail(0, err.Error())
	}
	a.put = &putState{hdr: h, f: f, path: path}
	return nil
}

// abortPut closes a half-received file, keeping its .part for a resume.
func (a *agent) abortPut() {
	if a.put != nil {
		a.put.f.Close()
		a.put = nil
	}
}

func (a *agent) putEnd() error {
	ps := a.put
	if ps == nil {
		return a.fail(0, "end of a file that was not begun")
	}
	a.put = nil
	err := ps.f.Sync()
	if cerr := ps.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return a.fail(0, fmt.Sprintf("saving %s on the second PC failed: %v", ps.path, err))
	}
	sum, err := fileSHA256(ps.path + ".part")
	if err != nil {
		return a.fail(0, err.Error())
	}
	if sum != ps.hdr.SHA256 {
		os.Remove(ps.path + ".part")
		return a.fail(0, fmt.Sprintf("%s arrived damaged (sha256 %s, expected %s); run prepare again", ps.hdr.Name, sum[:12], ps.hdr.SHA256[:min(12, len(ps.hdr.SHA256))]))
	}
	mode := os.FileMode(ps.hdr.Mode & 0o755) // never group- or world-writable, never setuid
	if mode == 0 {
		mode = 0o644
	}
	os.Chmod(ps.path+".part", mode)
	if err := os.Rename(ps.path+".part", ps.path); err != nil {
		return a.fail(0, fmt.Sprintf("cannot replace %s on the second PC: %v (is it in use?)", ps.path, err))
	}
	st, _ := os.Stat(ps.path)
	return a.fw.WriteJSON(framing.PutReply, framing.FileInfo{Name: ps.hdr.Name, Exists: true, Size: st.Size(), SHA256: sum, Path: ps.path})
}

// inside reports whether path is in dir or below it.
func inside(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// refuseUpload says why an upload may not happen ("": it may). The agent
// never replaces its own program; a program (strata-vision, a library, an
// executable mode) only as prepare's checksummed install.
func (a *agent) refuseUpload(h framing.PutHeader) string {
	self := []string{"strata-vision-relay", "strata-vision-relay.exe"}
	if exe, err := os.Executable(); err == nil {
		self = append(self, filepath.Base(exe))
	}
	for _, n := range self {
		if strings.EqualFold(h.Name, n) {
			return fmt.Sprintf("the agent does not replace its own program (%s) through an upload; install a new agent with your own login: pair the second PC again (strata-service remote pair, or the setup wizard's Pair)", h.Name)
		}
	}
	if !isProgram(h, a.cfg.Encoder) {
		return ""
	}
	for _, sum := range a.cfg.InstallSHA256 {
		if sum != "" && strings.EqualFold(sum, h.SHA256) {
			return ""
		}
	}
	return fmt.Sprintf("%s is a program; the agent installs programs only as prepare's checksummed install (its sha256 on the agent's command line), and this one is not among them", h.Name)
}

// isProgram: the upload would be run (the encoder, a library beside it, an
// executable mode).
func isProgram(h framing.PutHeader, encoder string) bool {
	n := strings.ToLower(h.Name)
	if h.Mode&0o111 != 0 || n == "strata-vision" || n == "strata-vision.exe" || (encoder != "" && strings.EqualFold(h.Name, filepath.Base(encoder))) {
		return true
	}
	for _, ext := range []string{".exe", ".dll", ".dylib", ".so", ".bat", ".cmd", ".ps1", ".com"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return strings.Contains(n, ".so.")
}

// endInput says the relay's side of the session ended (once).
func (a *agent) endInput() { a.endOnce.Do(func() { close(a.inputEnded) }) }
