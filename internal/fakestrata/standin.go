// Package fakestrata is a stand-in for the Strata server (serve/server.py),
// for tests and demos on machines with no GPU and no Strata: it takes the
// same arguments, reads the same config keys, prints Strata's startup lines
// on a schedule, serves /health and /v1/status, appends to the engine log,
// starts the config's vision encoder and checks its READY line (then hands it
// pictures as ENC lines, under one lock like Strata's request queue, keeps
// Strata's 64-entry result cache by sha256, and starts an encoder that died
// during a picture again on the next one), and exits at once when its port is
// taken, all as docs/strata.md describes. Environment
// variables make it misbehave on purpose (see Mode).
//
// The binary is internal/fakestrata/cmd/strata-standin; NewRoot lays out a
// fake Strata install whose venv python runs it. See docs/service.md.
package fakestrata

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Environment variables the stand-in reads.
const (
	// EnvStep is the pause between startup lines (a Go duration; default 1s,
	// tests use a few ms). Strata's real start takes 30-90 s.
	EnvStep = "STRATA_STANDIN_STEP"
	// EnvMode is a comma-separated list of misbehaviours:
	//   crash-after=D          exit with code 3 (a Python traceback) D after ready, leaving the engine running
	//   hang                   print the first line, then never get ready
	//   hang-engine=V          hang as above, only when engine/BUILD.json says version V (a new engine that hangs)
	//   fail-start             print an error and exit 1 before ready
	//   ignore-term            ignore SIGTERM (and so does the engine): only a kill stops it
	//   engine-restart-after=D print "the engine had stopped ... / running again" D after ready
	//   no-ready-line          serve, but print "listening on ..." instead of the ready line
	//                          (a version worded otherwise: only /health tells)
	EnvMode = "STRATA_STANDIN_MODE"
	// EnvModeFile names a file whose content, read at every start, replaces
	// EnvMode: a test changes it between restarts.
	EnvModeFile = "STRATA_STANDIN_MODE_FILE"
	// EnvGPU is the GPU the stand-in plays Strata on: "none" (a PC without a
	// CUDA GPU), or "NAME:TOTAL_MIB" (e.g. "NVIDIA GeForce RTX 4070:12282").
	// Its expert cache then follows from that card and from where the config
	// reads pictures (see ExpertCache). Unset: the reference machine's
	// RTX 5080 with the encoder on it (3112 experts, 5.96 GiB), whatever the
	// config says, as the tests expect. `strata-standin make-root` sets it
	// from this PC's probe.
	EnvGPU = "STRATA_STANDIN_GPU"
	// EnvArgsFile, when set, gets one JSON line per start: {"args","cwd","pid"}.
	EnvArgsFile = "STRATA_STANDIN_ARGS_FILE"

	engineRole = "--standin-engine"
)

// The reference machine (docs/strata.md, "What people measured"): a 16 GB RTX 5080
// serving the model, with the encoder on it or elsewhere.
const (
	refGPUName      = "NVIDIA GeForce RTX 5080"
	refGPUTotalMiB  = 16303
	refCacheGPUMiB  = 6103 // 5.96 GiB: the encoder on the GPU
	refExpertsGPU   = 3112
	refCacheFreeMiB = 7127 // 6.96 GiB: the encoder elsewhere (CPU, second PC)
	refExpertsFree  = 3641
	reserveMiB      = 700
)

// GPU is the card the stand-in plays Strata on (EnvGPU).
type GPU struct {
	Name     string
	TotalMiB int
}

// ParseGPU reads EnvGPU: ok is false when unset (the legacy fixed figures);
// a nil GPU means none.
func ParseGPU(v string) (g *GPU, ok bool, err error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return nil, false, nil
	case "none":
		return nil, true, nil
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return nil, false, fmt.Errorf("%s=%q: want none or NAME:TOTAL_MIB", EnvGPU, v)
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n <= 0 {
		return nil, false, fmt.Errorf("%s=%q: the total VRAM is not a number of MiB", EnvGPU, v)
	}
	return &GPU{Name: v[:i], TotalMiB: n}, true, nil
}

// ExpertCache is the expert cache a real Strata fills on g, with the encoder
// on that GPU or not: the reference machine's figures, moved by the
// difference in VRAM (the model's other weights and the reserve stay the
// same), in experts of the size measured there. No GPU (or one too small):
// no cache; the experts are read from RAM.
func ExpertCache(g *GPU, encoderOnGPU bool) (experts int, gib float64) {
	if g == nil {
		return 0, 0
	}
	cache, n := refCacheFreeMiB, refExpertsFree
	if encoderOnGPU {
		cache, n = refCacheGPUMiB, refExpertsGPU
	}
	mib := cache + g.TotalMiB - refGPUTotalMiB
	if mib <= 0 {
		return 0, 0
	}
	experts = int(float64(mib)*float64(n)/float64(cache) + 0.5)
	return experts, float64(int(float64(mib)/1024*100+0.5)) / 100
}

// Mode is the parsed EnvMode.
type Mode struct {
	CrashAfter         time.Duration // 0: never
	Crash              bool
	Hang               bool
	HangEngine         string // hang only when the engine's BUILD.json says this version
	FailStart          bool
	IgnoreTerm         bool
	EngineRestartAfter time.Duration
	EngineRestart      bool
	NoReadyLine        bool
}

// ParseMode reads a mode string ("crash-after=2s,ignore-term").
func ParseMode(s string) (Mode, error) {
	var m Mode
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "crash-after":
			m.Crash = true
			m.CrashAfter, err = time.ParseDuration(v)
		case "hang":
			m.Hang = true
		case "hang-engine":
			m.HangEngine = v
		case "fail-start":
			m.FailStart = true
		case "ignore-term":
			m.IgnoreTerm = true
		case "no-ready-line":
			m.NoReadyLine = true
		case "engine-restart-after":
			m.EngineRestart = true
			m.EngineRestartAfter, err = time.ParseDuration(v)
		default:
			return m, fmt.Errorf("unknown stand-in mode %q", f)
		}
		if err != nil {
			return m, fmt.Errorf("stand-in mode %q: %w", f, err)
		}
	}
	return m, nil
}

// Config is what the stand-in reads from strata-<tag>.json.
type Config struct {
	Exe     string            `json:"exe"`
	Port    int               `json:"port"`
	Host    string            `json:"host"`
	Log     string            `json:"log"`
	APIKey  string            `json:"api_key"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	GPU     any               `json:"gpu"`
	Vision  *VisionConfig     `json:"vision"`
	Context int               `json:"ctx_size"`
	Args    []string          `json:"args"`
	// LazyLoad: the model loads on the first request, not at start
	// (text-only: with a vision block Strata refuses to start, exit 2).
	LazyLoad any `json:"lazy_load"`
	// IdleUnloadS: after this many seconds without a request the model is
	// unloaded, its engine and its encoder ended; the next request starts
	// both again, the encoder first.
	IdleUnloadS any `json:"idle_unload_s"`
}

// VisionConfig is the config's `vision` block.
type VisionConfig struct {
	Exe        string `json:"exe"`
	MMProj     string `json:"mmproj"`
	Model      string `json:"model"`
	GPU        any    `json:"gpu"`
	MaxTokens  any    `json:"max_tokens"`
	Threads    any    `json:"threads"`
	MinTokens  any    `json:"min_tokens"`
	CudaDevice *int   `json:"cuda_device"`
	Remote     bool   `json:"remote"`
}

// truthy is Python's truth of a JSON value, as `if cfg.get(key):` tests it.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

// pyStr is str() of a JSON value as Python holds it: 4 -> "4", 4.5 -> "4.5",
// 4.0 -> "4.0", true -> "True".
func pyStr(v any) string {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) && !strings.Contains(strconv.FormatFloat(x, 'g', -1, 64), "e") {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// gpuList is server.py's gpu_list: the config's "gpu" as card numbers
// (2, [0, 2] or "0,2"); none when it names none.
func gpuList(g any) []string {
	var items []string
	switch x := g.(type) {
	case nil:
		return nil
	case []any:
		for _, e := range x {
			items = append(items, pyStr(e))
		}
	default:
		items = strings.Split(pyStr(x), ",")
	}
	var out []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// Main is the stand-in's main; it returns the exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == engineRole {
		return engineMain()
	}
	// `python setup.py ...`: Strata's setup (setup.go).
	if len(args) > 0 && filepath.Base(args[0]) == "setup.py" {
		return setupMain(args[0], args[1:], os.Stdout)
	}
	// `python serve/server.py --engine ...`: the shim passes the script path first.
	if len(args) > 0 && strings.HasSuffix(args[0], ".py") {
		args = args[1:]
	}
	s := &server{out: os.Stdout}
	return s.main(args)
}

type cached struct {
	reply string
	size  int64
}

const cacheEntries = 64

type server struct {
	out io.Writer
	mu  sync.Mutex // guards the encoder

	cfg        Config
	configPath string
	port       int
	model      string
	logFile    *os.File
	encoder    *exec.Cmd
	encIn      io.WriteCloser
	encOut     *bufio.Reader
	encErr     string
	encStopped bool   // the encoder exited during a picture: start it again on the next
	visionDir  string // this run's strata-vision-* folder (kept, as Strata keeps it)
	// cache is Strata's result cache by the picture's sha256 (64 entries):
	// a re-sent picture is not encoded again.
	cache      map[string]cached
	cacheOrder []string
	engine     *exec.Cmd
	engineIn   io.WriteCloser
	nEmbd      int
	engineName string
	// what this PC's GPU gives: set in main from EnvGPU and the config
	experts  int
	cacheGiB float64
	gpu      *GPU
	legacy   bool
	// version is the engine's, read from engine/BUILD.json as it starts
	// (as Strata's StrataEngine does): a BUILD.json replaced while it runs
	// does not change it.
	version string
	// busy counts the chat requests being answered (GET /status "busy").
	busy atomic.Int32
	step time.Duration
	mode Mode

	// loaded: the model is in (engine running, and the encoder when vision
	// is on); false before a lazy start's first request and after an
	// unload. Changed under mu.
	loaded atomic.Bool
	// idle is the idle_unload_s timer, reset by every request (nil without).
	idle     *time.Timer
	idleFor  time.Duration
	unloadMu sync.Mutex // guards idle
}

func (s *server) say(format string, a ...any) { fmt.Fprintf(s.out, format+"\n", a...) }

func (s *server) main(args []string) int {
	fs := flag.NewFlagSet("server.py", flag.ContinueOnError)
	engine := fs.String("engine", "mock", "engine")
	config := fs.String("config", "", "config")
	port := fs.Int("port", 0, "port")
	open := fs.Bool("open", false, "open a browser")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s.engineName = *engine
	recordArgs(args)
	if *open {
		s.say("[strata] opening a browser at the chat page")
	}
	mode, err := currentMode()
	if err != nil {
		s.say("stand-in: %v", err)
		return 2
	}
	step := time.Second
	if v := os.Getenv(EnvStep); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			step = d
		}
	}
	s.step = step
	if *config == "" {
		s.say("error: --config is required with --engine strata")
		return 2
	}
	s.configPath = *config
	gpu, set, err := ParseGPU(os.Getenv(EnvGPU))
	if err != nil {
		s.say("stand-in: %v", err)
		return 2
	}
	s.legacy = !set
	b, err := os.ReadFile(*config)
	if err != nil {
		s.say("error: cannot read the config %s: %v", *config, err)
		return 1
	}
	if err := json.Unmarshal(b, &s.cfg); err != nil {
		s.say("error: the config %s is not valid JSON: %v", *config, err)
		return 1
	}
	lazy := truthy(s.cfg.LazyLoad)
	for _, a := range s.cfg.Args {
		lazy = lazy || a == "--lazy"
	}
	if lazy && s.cfg.Vision != nil {
		// server.py @5f8f3f2: argparse's error, exit 2, before anything starts.
		fmt.Fprintln(os.Stderr, "usage: server.py [-h] [--engine {mock,strata}] [--config CONFIG] [--port PORT] [--open] [--lazy]")
		fmt.Fprintln(os.Stderr, "server.py: error: lazy loading is text-only; disable vision in the config")
		return 2
	}
	if v, ok := s.cfg.IdleUnloadS.(float64); ok && v > 0 {
		s.idleFor = time.Duration(v * float64(time.Second))
	}
	s.mode = mode
	if s.legacy {
		s.gpu = &GPU{Name: "Stand-in GPU", TotalMiB: refGPUTotalMiB}
		s.experts, s.cacheGiB = refExpertsGPU, 5.96
	} else {
		v := s.cfg.Vision
		onGPU := v != nil && !v.Remote && truthy(v.GPU) && (v.CudaDevice == nil || *v.CudaDevice == 0)
		s.gpu = gpu
		s.experts, s.cacheGiB = ExpertCache(gpu, onGPU)
	}
	s.port = *port
	if s.port == 0 {
		s.port = s.cfg.Port
	}
	if s.port == 0 {
		s.port = 8080
	}
	host := s.cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if !isLoopbackHost(host) && s.cfg.APIKey == "" {
		s.say("error: host %s is not loopback: set api_key in %s", host, *config)
		return 1
	}
	tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(*config), "strata-"), ".json")
	s.model = "strata-" + tag
	if s.engineName != "strata" {
		s.model = "mock"
	}

	// The port is checked first: a busy port ends the server at once.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(s.port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			s.say("[strata] error: port %d is already in use (is another server running?); stop it or choose another --port", s.port)
			return 1
		}
		s.say("[strata] error: cannot listen on %s:%d: %v", host, s.port, err)
		return 1
	}
	defer ln.Close()

	if s.cfg.Log != "" {
		lp := s.cfg.Log
		if !filepath.IsAbs(lp) {
			lp = filepath.Join(s.baseDir(), lp)
		}
		if f, err := os.OpenFile(lp, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			s.logFile = f
			defer f.Close()
		} else {
			s.say("[strata] warning: cannot open the engine log %s: %v", lp, err)
		}
	}

	sigs := make(chan os.Signal, 2)
	if mode.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(sigs, os.Interrupt)
	} else {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	}
	stopped := make(chan struct{})
	go func() {
		<-sigs
		close(stopped)
	}()
	pause := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-stopped:
			return false
		}
	}

	s.say("[strata] Strata server starting (engine %s, config %s, port %d)", s.engineName, *config, s.port)
	if mode.Hang || mode.HangEngine != "" && s.buildVersion() == mode.HangEngine {
		<-stopped
		s.say("[strata] stopping ...")
		return 0
	}
	if !pause(step) {
		return s.shutdown()
	}
	if mode.FailStart {
		s.say("[strata] error: the engine did not start (exit code 1); see %s", s.cfg.Log)
		s.logLine("strata generate: error: cannot allocate the expert cache (stand-in fail-start)")
		return 1
	}
	if s.engineName == "strata" && !lazy {
		if err := s.startEngine(mode); err != nil {
			s.say("[strata] error: cannot start the engine: %v", err)
			return 1
		}
	}
	if s.engineName != "strata" {
		// server.py's mock-engine branch sets vision = None: no encoder.
		s.cfg.Vision = nil
	}
	s.loaded.Store(!lazy)
	if s.cfg.Vision != nil {
		s.say("[strata] starting the vision encoder ...")
		s.say("[strata] loading the vision encoder ...")
		if line, err := s.startEncoder(); err != nil {
			if s.cfg.Vision.Remote {
				s.say("[strata] the vision encoder did not start (%s); serving text only, an image will ask for it again", line)
				s.encErr = line
			} else {
				s.say("the vision encoder did not start: %s", line)
				s.shutdown()
				return 1
			}
		}
		if !pause(step) {
			return s.shutdown()
		}
	}
	switch {
	case s.experts > 0:
		s.say("[strata] filling the GPU's expert cache (%d experts, %.2f GiB of VRAM) ...", s.experts, s.cacheGiB)
	case s.gpu == nil:
		// No CUDA GPU: no VRAM to cache experts in. The stand-in serves text
		// with every expert read from RAM, and says so instead of a cache.
		s.say("[strata] no CUDA GPU on this PC: no expert cache, the experts are read from RAM (slow)")
	default:
		s.say("[strata] %s has no VRAM left for an expert cache: the experts are read from RAM (slow)", s.gpu.Name)
	}
	if !pause(step) {
		return s.shutdown()
	}
	images := "images off"
	if s.cfg.Vision != nil {
		images = "images on"
	}
	key := "no API key"
	if s.cfg.APIKey != "" {
		key = "API key required"
	}
	s.touch()
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	base := fmt.Sprintf("http://%s/v1", net.JoinHostPort(host, strconv.Itoa(s.port)))
	if mode.NoReadyLine {
		s.say("[strata] listening on %s", base)
	} else {
		s.say("ready: %s  (OpenAI: %s, Anthropic: %s, context %d tokens, %s, %s)",
			base, base, strings.TrimSuffix(base, "/v1"), s.context(), images, key)
	}

	var crash, engRestart <-chan time.Time
	if mode.Crash {
		crash = time.After(mode.CrashAfter)
	}
	if mode.EngineRestart {
		engRestart = time.After(mode.EngineRestartAfter)
	}
	for {
		select {
		case <-engRestart:
			s.say("[strata] the engine had stopped (exit code -9); starting it again ...")
			s.say("[strata] the engine is running again")
		case <-crash:
			// A crash as Python shows it; the engine is left behind, as it is
			// when the server dies without its cleanup.
			s.say("Traceback (most recent call last):")
			s.say("  File \"serve/server.py\", line 1, in <module>")
			s.say("RuntimeError: stand-in crash (%s)", EnvMode)
			os.Stderr.WriteString("stand-in: crashing on purpose\n")
			return 3
		case <-stopped:
			srv.Close()
			return s.shutdown()
		}
	}
}

func (s *server) context() int {
	if s.cfg.Context > 0 {
		return s.cfg.Context
	}
	return 32768
}

// baseDir is where relative paths in the config resolve: its cwd, else the
// server's working directory.
func (s *server) baseDir() string {
	if s.cfg.Cwd != "" {
		return s.cfg.Cwd
	}
	wd, _ := os.Getwd()
	return wd
}

func (s *server) logLine(line string) {
	if s.logFile != nil {
		fmt.Fprintln(s.logFile, line)
	}
}

// shutdown tells the engine and the encoder QUIT and waits for them, as the
// server does on SIGTERM.
func (s *server) shutdown() int {
	s.say("[strata] stopping ...")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unloadMu.Lock()
	if s.idle != nil {
		s.idle.Stop()
	}
	s.unloadMu.Unlock()
	s.endChildren()
	return 0
}

// touch is a request: the idle_unload_s timer starts again.
func (s *server) touch() {
	if s.idleFor <= 0 {
		return
	}
	s.unloadMu.Lock()
	defer s.unloadMu.Unlock()
	if s.idle == nil {
		s.idle = time.AfterFunc(s.idleFor, s.idleUnload)
		return
	}
	s.idle.Reset(s.idleFor)
}

// idleUnload is idle_unload_s running out, as server.py does it: the line
// on stdout, then the engine and the encoder end (a relay, its ssh session
// and the second PC's encoder with it).
func (s *server) idleUnload() {
	if s.busy.Load() > 0 {
		s.touch()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded.Load() {
		return
	}
	secs := strconv.FormatFloat(s.idleFor.Seconds(), 'f', -1, 64)
	s.say("[strata] model unloaded after %s s idle; the next request loads it again", secs)
	s.unloadLocked()
}

// unloadLocked ends the engine and the encoder (mu held).
func (s *server) unloadLocked() {
	s.loaded.Store(false)
	s.endChildren()
}

// loadLocked loads the model again for a request (mu held): the encoder
// first, as at a start, then the engine.
func (s *server) loadLocked() error {
	if s.loaded.Load() {
		return nil
	}
	s.say("[strata] loading the model ...")
	if s.cfg.Vision != nil && s.engineName == "strata" {
		s.say("[strata] starting the vision encoder ...")
		if line, err := s.startEncoder(); err != nil {
			if !s.cfg.Vision.Remote {
				s.say("the vision encoder did not start: %s", line)
				return fmt.Errorf("the vision encoder did not start: %s", line)
			}
			s.say("[strata] the vision encoder did not start (%s); serving text only, an image will ask for it again", line)
			s.encErr = line
		}
	}
	if s.engineName == "strata" {
		if err := s.startEngine(s.mode); err != nil {
			return err
		}
	}
	s.loaded.Store(true)
	s.say("[strata] the model is loaded")
	return nil
}

// endChildren tells the engine and the encoder QUIT and waits for them
// (mu held); they are gone afterwards.
func (s *server) endChildren() {
	defer func() {
		s.engine, s.engineIn = nil, nil
		s.encoder, s.encIn, s.encOut = nil, nil, nil
	}()
	for _, p := range []struct {
		in  io.WriteCloser
		cmd *exec.Cmd
	}{{s.engineIn, s.engine}, {s.encIn, s.encoder}} {
		if p.cmd == nil {
			continue
		}
		io.WriteString(p.in, "QUIT\n")
		p.in.Close()
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	}
}

// childEnv is server.py's child_env (the engine's environment): the
// server's own, the config's GPUs as CUDA numbers them, then its `env`.
func (s *server) childEnv() []string {
	env := os.Environ()
	if g := gpuList(s.cfg.GPU); len(g) > 0 {
		env = append(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES="+strings.Join(g, ","))
	}
	for k, v := range s.cfg.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// visionEnv is server.py's vision_env: the engine's environment, with the
// vision block's cuda_device as the only card the encoder sees.
func (s *server) visionEnv() []string {
	env := s.childEnv()
	if d := s.cfg.Vision.CudaDevice; d != nil {
		env = append(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES="+strconv.Itoa(*d))
	}
	return env
}

// engineExe is the config's engine, relative paths from the config's folder.
func (s *server) engineExe() string {
	exe := s.cfg.Exe
	if exe != "" && !filepath.IsAbs(exe) {
		exe = filepath.Join(s.baseDir(), exe)
	}
	return exe
}

// buildVersion is the version the engine's BUILD.json says ("" when none).
func (s *server) buildVersion() string {
	var meta struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(s.engineExe()), "BUILD.json")); err == nil {
		_ = json.Unmarshal(b, &meta)
	}
	return meta.Version
}

func (s *server) startEngine(mode Mode) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The engine's BUILD.json says its version (read once, at start).
	if v := s.buildVersion(); v != "" {
		s.version = v
	}
	exe := s.engineExe()
	// An install whose engine/strata is a copy of the stand-in runs its
	// engine from there, as Strata runs engine/strata: while it runs, the
	// file cannot be opened for writing (what Strata's setup checks before
	// replacing an engine).
	if isStandin(exe) {
		self = exe
	}
	cmd := exec.Command(self, engineRole)
	cmd.Env = append(s.childEnv(), fmt.Sprintf("STRATA_STANDIN_ENGINE_CACHE=%d:%.2f", s.experts, s.cacheGiB))
	if mode.IgnoreTerm {
		cmd.Env = append(cmd.Env, "STRATA_STANDIN_ENGINE_IGNORE_TERM=1")
	}
	if s.logFile != nil {
		cmd.Stderr = s.logFile
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.engine, s.engineIn = cmd, in
	return nil
}

// engineMain is the "engine" child: it reports its expert cache on stderr
// (the engine log) and runs until QUIT or the end of stdin.
func engineMain() int {
	if os.Getenv("STRATA_STANDIN_ENGINE_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	n, gib, _ := strings.Cut(os.Getenv("STRATA_STANDIN_ENGINE_CACHE"), ":")
	if n == "" || n == "0" {
		fmt.Fprintln(os.Stderr, "strata generate: no expert cache in VRAM; experts are read from RAM (stand-in)")
	} else {
		fmt.Fprintf(os.Stderr, "strata generate: expert cache %s slots, %s GiB of VRAM; policy is lfu (stand-in)\n", n, gib)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "QUIT" {
			return 0
		}
	}
	if os.Getenv("STRATA_STANDIN_ENGINE_IGNORE_TERM") == "1" {
		// A stuck engine: outlives its server until killed. (Not
		// `select {}`: with no other goroutine the runtime would end it as a
		// deadlock, and a test of orphans could never fail.)
		for {
			time.Sleep(time.Hour)
		}
	}
	return 0
}

// startEncoder starts vision.exe as serve/server.py (@5f8f3f2) does and
// reads its first line; it returns that line (or why there is none) on
// failure. What it copies (main(), the Vision class, child_env, vision_env):
//   - exe, mmproj and model that are not absolute are made absolute against
//     the config's cwd, else the server's working directory ("."), whatever
//     they look like (a bare "strata-vision" too);
//   - the command is [exe, --mmproj M, --model X], then --gpu when `gpu` is
//     truthy (Python's truth: true, a non-zero number, a non-empty string or
//     list), --threads and --max-tokens when they are truthy, as str() writes
//     them; newer servers (#767) add --min-tokens when the block has
//     `min_tokens`;
//   - the environment is the server's plus, when the config's `gpu` names
//     cards, CUDA_DEVICE_ORDER=PCI_BUS_ID and CUDA_VISIBLE_DEVICES=<them>,
//     then the config's `env` entries; vision.cuda_device replaces
//     CUDA_VISIBLE_DEVICES (with the same order); nothing at all for
//     `gpu: false`;
//   - the encoder inherits the server's working directory; its stderr is
//     appended to the config's `log` (nowhere without one).
func (s *server) startEncoder() (string, error) {
	v := s.cfg.Vision
	if v.MMProj == "" || v.Model == "" {
		// server.py's cfg["mmproj"] raises KeyError before anything starts.
		return "vision needs mmproj and model", errors.New("incomplete vision block")
	}
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			base := s.cfg.Cwd
			if base == "" {
				base, _ = os.Getwd()
			} else if !filepath.IsAbs(base) {
				wd, _ := os.Getwd()
				base = filepath.Join(wd, base)
			}
			return filepath.Join(base, p)
		}
		return p
	}
	if s.visionDir == "" {
		// Vision.__init__: the run's temp folder, before the encoder starts.
		if dir, err := mkdtemp("strata-vision-"); err == nil {
			s.visionDir = dir
		}
	}
	exe := abs(v.Exe)
	args := []string{"--mmproj", abs(v.MMProj), "--model", abs(v.Model)}
	if truthy(v.GPU) {
		args = append(args, "--gpu")
	}
	if truthy(v.Threads) {
		args = append(args, "--threads", pyStr(v.Threads))
	}
	if truthy(v.MaxTokens) {
		args = append(args, "--max-tokens", pyStr(v.MaxTokens))
	}
	if v.MinTokens != nil {
		args = append(args, "--min-tokens", pyStr(v.MinTokens))
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = s.visionEnv()
	if s.logFile != nil {
		cmd.Stderr = s.logFile
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err.Error(), err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err.Error(), err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("cannot run %s: %v", exe, err), err
	}
	r := bufio.NewReader(out)
	wait := 300 * time.Second
	if n, err := strconv.Atoi(os.Getenv("STRATA_VISION_READY_S")); err == nil && n > 0 {
		wait = time.Duration(n) * time.Second
	}
	lineCh := make(chan string, 1)
	go func() {
		l, err := r.ReadString('\n')
		if err != nil && l == "" {
			l = "(the encoder exited without a word)"
		}
		lineCh <- strings.TrimSpace(l)
	}()
	var line string
	select {
	case line = <-lineCh:
	case <-time.After(wait):
		line = fmt.Sprintf("no READY within %d s", int(wait/time.Second))
	}
	if !strings.HasPrefix(line, "READY") {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return line, errors.New("no READY")
	}
	if f := strings.Fields(line); len(f) > 1 {
		s.nEmbd, _ = strconv.Atoi(f[1])
	}
	s.encoder, s.encIn, s.encOut = cmd, in, r
	return line, nil
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"status": "ok", "model": s.model, "max_context": s.context(),
			"images": s.cfg.Vision != nil, "api_key": s.cfg.APIKey != "",
			"loaded": s.loaded.Load(), "service": "strata",
		})
	})
	// GET /status (no key): {"busy": true} while a request is answered.
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"busy": s.busy.Load() > 0})
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r) {
			writeJSON(w, 401, map[string]any{"error": "an API key is required"})
			return
		}
		s.mu.Lock()
		alive := s.encoder != nil && s.encoder.ProcessState == nil
		vis := map[string]any{"enabled": s.cfg.Vision != nil, "available": alive, "error": nil}
		if s.encErr != "" {
			vis["error"] = s.encErr
		}
		s.mu.Unlock()
		gpus := []any{}
		vram := map[string]any{"reserve_mib": 0, "expert_cache_gib": 0, "experts": 0}
		if g := s.gpu; g != nil {
			used := 14000 // the reference machine's
			if !s.legacy {
				used = min(g.TotalMiB, g.TotalMiB-refGPUTotalMiB+14000)
			}
			gpus = append(gpus, map[string]any{"index": 0, "name": g.Name, "used_mib": used, "total_mib": g.TotalMiB})
			vram = map[string]any{"reserve_mib": reserveMiB, "expert_cache_gib": s.cacheGiB, "experts": s.experts}
		}
		writeJSON(w, 200, map[string]any{
			"model":   s.model,
			"engine":  s.version,
			"vision":  vis,
			"vram":    vram,
			"machine": map[string]any{"gpu": gpus},
		})
	})
	// POST /v1/chat/completions: a text answer, generated under the same
	// request FIFO as pictures (server.py: `with self.fifo:` around the
	// encode and the generation), so a text request waits while a picture is
	// read, as it does in Strata's main repository. With max_tokens it
	// generates that many tokens, one per step; GET /status says busy while
	// it does (one sequence at a time, as Strata).
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r) {
			writeJSON(w, 401, map[string]any{"error": "an API key is required"})
			return
		}
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		s.busy.Add(1)
		defer s.busy.Add(-1)
		s.touch()
		defer s.touch()
		s.mu.Lock()
		err := s.loadLocked()
		s.mu.Unlock()
		if err != nil {
			writeJSON(w, 500, map[string]any{"error": "the model could not be loaded: " + err.Error()})
			return
		}
		content := "Hello from the stand-in engine."
		if req.MaxTokens > 0 {
			n := 0
			t := time.NewTicker(max(s.step, time.Millisecond))
			defer t.Stop()
			for n < req.MaxTokens {
				select {
				case <-r.Context().Done():
					return
				case <-t.C:
					n++
				}
			}
			content = strings.TrimSpace(strings.Repeat("ok ", n))
		}
		writeJSON(w, 200, map[string]any{
			"object": "chat.completion", "model": s.model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	})
	// POST /standin/encode: the body is a picture; it goes to the encoder as
	// Strata sends it (ENC <tmp>/strata-vision-XXXX/<sha>.img <same>.sve) and
	// the reply comes back. Not a Strata endpoint: it lets the relay be tested
	// end to end without a chat request.
	mux.HandleFunc("POST /standin/encode", func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r) {
			writeJSON(w, 401, map[string]any{"error": "an API key is required"})
			return
		}
		img, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeJSON(w, 400, map[string]any{"error": err.Error()})
			return
		}
		s.busy.Add(1)
		defer s.busy.Add(-1)
		s.touch()
		defer s.touch()
		reply, sveBytes, err := s.encode(img)
		if err != nil {
			writeJSON(w, 400, map[string]any{"error": "the image could not be read: " + err.Error()})
			return
		}
		writeJSON(w, 200, map[string]any{"reply": reply, "sve_bytes": sveBytes})
	})
	// POST /v1/unload and /v1/load (with the key): the model out (its
	// engine and encoder ended) or in, on request.
	mux.HandleFunc("POST /v1/unload", func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r) {
			writeJSON(w, 401, map[string]any{"error": "an API key is required"})
			return
		}
		s.mu.Lock()
		s.unloadLocked()
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"loaded": false})
	})
	mux.HandleFunc("POST /v1/load", func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r) {
			writeJSON(w, 401, map[string]any{"error": "an API key is required"})
			return
		}
		s.touch()
		s.mu.Lock()
		err := s.loadLocked()
		s.mu.Unlock()
		if err != nil {
			writeJSON(w, 500, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, 200, map[string]any{"loaded": true})
	})
	return s.guard(mux)
}

func (s *server) encode(img []byte) (string, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(img)
	key := hex.EncodeToString(sum[:])
	if c, ok := s.cache[key]; ok {
		return c.reply, c.size, nil
	}
	if s.encoder == nil && s.cfg.Vision != nil && s.encStopped {
		// An encoder that stopped during a picture is started again on the
		// next one, as Strata does.
		if line, err := s.startEncoder(); err != nil {
			return "", 0, fmt.Errorf("the vision encoder did not start: %s", line)
		}
		s.encStopped = false
	}
	if s.encoder == nil {
		return "", 0, errors.New("vision is not available")
	}
	// One folder per run, made when vision starts and left behind with its
	// cached .sve files (server.py's Vision: tempfile.mkdtemp(prefix=
	// "strata-vision-"), never removed).
	if s.visionDir == "" {
		dir, err := mkdtemp("strata-vision-")
		if err != nil {
			return "", 0, err
		}
		s.visionDir = dir
	}
	dir := s.visionDir
	name := key[:32]
	in, out := filepath.Join(dir, name+".img"), filepath.Join(dir, name+".sve")
	if err := os.WriteFile(in, img, 0o644); err != nil {
		return "", 0, err
	}
	if _, err := fmt.Fprintf(s.encIn, "ENC %s %s\n", in, out); err != nil {
		return "", 0, errors.New("the vision encoder stopped")
	}
	line, err := s.encOut.ReadString('\n')
	os.Remove(in)
	if err != nil {
		s.encoder.Wait()
		s.encoder = nil
		s.encStopped = true
		return "", 0, errors.New("the vision encoder stopped")
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "ERR") {
		return line, 0, errors.New(strings.TrimSpace(strings.TrimPrefix(line, "ERR")))
	}
	st, err := os.Stat(out)
	if err != nil {
		return line, 0, fmt.Errorf("the encoder answered %q but wrote no output", line)
	}
	if s.cache == nil {
		s.cache = map[string]cached{}
	}
	if len(s.cacheOrder) >= cacheEntries {
		delete(s.cache, s.cacheOrder[0])
		os.Remove(filepath.Join(dir, s.cacheOrder[0][:32]+".sve")) // oldest first, as server.py
		s.cacheOrder = s.cacheOrder[1:]
	}
	s.cache[key] = cached{line, st.Size()}
	s.cacheOrder = append(s.cacheOrder, key)
	return line, st.Size(), nil
}

func (s *server) keyOK(r *http.Request) bool {
	if s.cfg.APIKey == "" {
		return true
	}
	if r.Header.Get("Authorization") == "Bearer "+s.cfg.APIKey || r.Header.Get("x-api-key") == s.cfg.APIKey {
		return true
	}
	return false
}

// guard is Strata's DNS-rebinding check: without an api_key, a request whose
// Host is not a local name is refused.
func (s *server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.APIKey == "" {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !isLoopbackHost(host) {
				writeJSON(w, 403, map[string]any{"error": "forbidden host"})
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func isLoopbackHost(h string) bool {
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func currentMode() (Mode, error) {
	s := os.Getenv(EnvMode)
	if f := os.Getenv(EnvModeFile); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			s = string(b)
		}
	}
	return ParseMode(s)
}

func recordArgs(args []string) {
	f := os.Getenv(EnvArgsFile)
	if f == "" {
		return
	}
	wd, _ := os.Getwd()
	b, _ := json.Marshal(map[string]any{"args": args, "cwd": wd, "pid": os.Getpid()})
	if fh, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fh.Write(append(b, '\n'))
		fh.Close()
	}
}

// mkdtemp makes a folder as Python's tempfile.mkdtemp names it: the prefix
// and eight of "abcdefghijklmnopqrstuvwxyz0123456789_", mode 0700, in the
// temp folder (TMPDIR).
func mkdtemp(prefix string) (string, error) {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789_"
	for i := 0; ; i++ {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		for j := range b {
			b[j] = letters[int(b[j])%len(letters)]
		}
		dir := filepath.Join(os.TempDir(), prefix+string(b[:]))
		err := os.Mkdir(dir, 0o700)
		if err == nil || !os.IsExist(err) || i > 100 {
			return dir, err
		}
	}
}
