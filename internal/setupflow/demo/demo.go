// Package demo is a set of canned setupflow adapters for a realistic machine
// (an RTX 4080 16 GB here, a second PC with an RTX 3060 over 1 GbE): the
// tests drive the flow with them, and strata-setup uses them when
// STRATA_SETUP_DEMO=1 (screenshots, trying the wizard without a GPU). Every
// call is recorded, and each step can be made to fail.
package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// World is the canned machine. Zero Delay makes every step instant (tests);
// the wizard's demo mode sets a delay so progress can be seen.
type World struct {
	Delay time.Duration

	// Root is the Strata install (created on disk by NewWorld when Dir is set).
	Root   string
	Config string

	// Fail names steps that fail: "find", "probe", "remote-probe", "pair",
	// "prepare", "plan", "install", "write", "settings", "start", "follow",
	// and lend.go's "find-lenders", "pair-code", "lend-start", "lend-code",
	// "lend-stop".
	Fail map[string]error
	// HangAt names a step that waits until it is cancelled ("follow": Strata
	// prints its first lines and never gets ready).
	HangAt string
	// HostKeyAsked counts the host key questions.
	HostKeyAsked int

	mu    sync.Mutex
	calls []string

	// Service state.
	Installed, Running bool
	// Settings is the in-memory companion settings (nil: none yet).
	Settings *settings.Settings
	// Login is "start tray at login".
	Login bool
	// ConfigText is the config's content (the fake planner edits it).
	ConfigText string
	Backups    map[string]string
	// Unpaired counts Unpair calls.
	Paired bool

	// Found are the PCs that lend their GPU on the demo network (lend.go;
	// empty: none answers).
	Found []lend.Announcement
	// Lent is this PC lending its GPU (lend.go).
	Lent LentState
}

// NewWorld returns a world whose Strata lives at root (a path; not created).
func NewWorld(root string) *World {
	cfg := filepath.Join(root, "strata-iq2_xs.json")
	return &World{
		Root: root, Config: cfg, Fail: map[string]error{}, Backups: map[string]string{},
		ConfigText: baseConfig, Found: append([]lend.Announcement(nil), Lenders...),
	}
}

const baseConfig = `{
  "exe": "engine/strata",
  "args": ["--ctx", "32768", "--vision", "--vram-reserve-mib", "700"],
  "port": 8080,
  "log": "strata-iq2_xs.log",
  "vision": {
    "mmproj": "models/mmproj-BF16.gguf",
    "model": "models/Qwen3.5-35B-A3B-IQ2_XS-00001-of-00002.gguf",
    "gpu": true,
    "max_tokens": 1024
  }
}
`

func (w *World) record(format string, a ...any) {
	w.mu.Lock()
	w.calls = append(w.calls, fmt.Sprintf(format, a...))
	w.mu.Unlock()
}

// Calls are the recorded calls, in order.
func (w *World) Calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls...)
}

func (w *World) fail(step string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Fail[step]
}

// wait sleeps n delays or until ctx ends.
func (w *World) wait(ctx context.Context, n int) error {
	if w.Delay == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(n) * w.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// steps reports a progress bar in n steps.
func (w *World) steps(ctx context.Context, step string, texts []string, progress func(setupflow.Progress)) error {
	for i, t := range texts {
		progress(setupflow.Progress{Step: step, Fraction: float64(i) / float64(len(texts)), Text: t})
		if err := w.wait(ctx, 1); err != nil {
			return err
		}
	}
	progress(setupflow.Progress{Step: step, Fraction: 1, Text: "Done"})
	return nil
}

// Deps wires the world into the flow; confirm answers host key questions.
func (w *World) Deps(confirm setupflow.ConfirmHostKey) setupflow.Deps {
	return setupflow.Deps{
		Finder: finder{w}, Prober: prober{w}, Remote: remote{w}, Config: planner{w},
		Service: service{w}, Settings: store{w}, Login: login{w}, Confirm: confirm,
		Measurer: measurer{w}, Lenders: lenders{w}, Lending: lending{w},
	}
}

// ---- Finder ----

type finder struct{ w *World }

func (f finder) install() setupflow.Install {
	return setupflow.Install{
		Root:    f.w.Root,
		Configs: []string{f.w.Config, filepath.Join(f.w.Root, "strata-coder-iq1_m.json")},
		InUse:   f.w.Config,
		Python:  filepath.Join(f.w.Root, ".venv", "bin", "python"),
	}
}

func (f finder) Find(ctx context.Context) ([]setupflow.Install, error) {
	f.w.record("find")
	if err := f.w.wait(ctx, 2); err != nil {
		return nil, err
	}
	if err := f.w.fail("find"); err != nil {
		return nil, err
	}
	old := setupflow.Install{Root: filepath.Join(filepath.Dir(f.w.Root), "strata-old"),
		Problems: []string{"no Python venv at .venv: run setup.sh in that folder first"}}
	return []setupflow.Install{f.install(), old}, nil
}

func (f finder) Inspect(ctx context.Context, root string) (setupflow.Install, error) {
	f.w.record("inspect %s", root)
	if filepath.Clean(root) == filepath.Clean(f.w.Root) {
		return f.install(), nil
	}
	return setupflow.Install{}, fmt.Errorf("%s is not a Strata install: it has no serve/server.py and engine/ folder", root)
}

// ---- Prober ----

type prober struct{ w *World }

// Local is the canned PC: an RTX 4080 16 GB with Strata's model loaded.
var Local = setupflow.Machine{
	GPUs:    []nvsmi.GPU{{Index: 0, Name: "NVIDIA GeForce RTX 4080", TotalMiB: 16376, FreeMiB: 2214, Driver: "581.57"}},
	CPU:     "AMD Ryzen 7 7800X3D 8-Core Processor",
	Cores:   8,
	Threads: 16,
	RAMMiB:  65459,
	FreeMiB: 30112,
}

func (p prober) Probe(ctx context.Context, progress func(setupflow.Progress)) (*setupflow.Machine, error) {
	p.w.record("probe")
	if err := p.w.steps(ctx, "probe", []string{"Asking nvidia-smi about the GPUs", "Reading the CPU and memory", "Checking Strata's requirements"}, progress); err != nil {
		return nil, err
	}
	if err := p.w.fail("probe"); err != nil {
		return nil, err
	}
	m := Local
	m.GPUs = append([]nvsmi.GPU(nil), Local.GPUs...)
	return &m, nil
}

func (p prober) Recommend(local *setupflow.Machine, r *setupflow.RemoteReport) setupflow.Recommendation {
	return Recommend(local, r)
}

// Recommend follows Strata's measured figures (RTX 5080 server, RTX 3060
// second PC, 10 GbE): GPU 1.6 s and 1383 MiB, remote 2.8 s, CPU 15 s with 8
// threads, scaled by the link's throughput and the thread count.
func Recommend(local *setupflow.Machine, r *setupflow.RemoteReport) setupflow.Recommendation {
	rec := setupflow.Recommendation{Basis: "Strata's measurements (RTX 5080 server, RTX 3060 second PC), scaled to this PC's threads and the measured link"}
	hasGPU := local != nil && len(local.GPUs) > 0
	gpu := setupflow.Option{Placement: settings.PlacementGPU, Label: settings.PlacementGPU.Info().Label, Available: hasGPU, PictureSeconds: 1.63, VRAMMiB: 1383}
	if hasGPU {
		gpu.Note = fmt.Sprintf("Fastest pictures; takes about 1.4 GB of the %s's VRAM from Strata's expert cache (about 530 fewer experts).", local.GPUs[0].Name)
	} else {
		gpu.Why = "no NVIDIA GPU was found"
	}
	threads := 8
	if local != nil && local.Threads > 0 {
		threads = local.Threads / 2
	}
	cpu := setupflow.Option{Placement: settings.PlacementCPU, Label: settings.PlacementCPU.Info().Label, Available: true,
		PictureSeconds: 15.27 * 8 / float64(max(threads, 1)), VRAMMiB: -1383,
		Note: fmt.Sprintf("No VRAM used; slow pictures with %d threads, and the CPU is busy meanwhile. ", threads) + setupflow.TextWaits}
	rem := setupflow.Option{Placement: settings.PlacementRemote, Label: settings.PlacementRemote.Info().Label, Available: true, VRAMMiB: -1383,
		Note: "Frees the VRAM for Strata's expert cache; pictures travel over the network. " + setupflow.TextWaits}
	if r != nil {
		// ~10 MB back for a 1024-token result, ~0.3 MB there.
		link := 0.3/max(r.UpMBps, 1) + 10.0/max(r.DownMBps, 1) + 4*r.RTTms/1000
		rem.PictureSeconds = 1.63 + 0.35 + link
		rem.Note = fmt.Sprintf("%s with %.1f GB free, %.0f ms away: frees 1.4 GB of VRAM here for about %s more per picture. %s",
			r.GPUName(), float64(r.FreeVRAMMiB())/1024, r.RTTms, setupflow.FormatSeconds(rem.PictureSeconds-1.63), setupflow.TextWaits)
	} else {
		rem.PictureSeconds = 2.83
		rem.Note += " Probe it to see its own figures."
	}
	off := setupflow.Option{Placement: settings.PlacementOff, Label: settings.PlacementOff.Info().Label, Available: true, VRAMMiB: -1383,
		Note: "Strata answers text only; a picture is refused."}
	rec.Options = []setupflow.Option{gpu, cpu, rem, off}
	switch {
	case hasGPU && local.GPUs[0].TotalMiB >= 24*1024:
		rec.Best, rec.Reason = settings.PlacementGPU, "This GPU has room for both the encoder and a large expert cache."
	case hasGPU && r != nil && len(r.GPUs) > 0:
		rec.Best, rec.Reason = settings.PlacementRemote, "A 16 GB card is tight: reading pictures on the second PC gives Strata's expert cache 1.4 GB more, for about a second more per picture."
	case hasGPU:
		rec.Best, rec.Reason = settings.PlacementGPU, "Pictures are fastest on this GPU. If you have a second PC with an NVIDIA GPU, reading pictures there frees 1.4 GB of VRAM."
	default:
		rec.Best, rec.Reason = settings.PlacementCPU, "No usable GPU: the CPU reads pictures, slowly but without VRAM."
	}
	return rec
}

// ---- Measurer ----

type measurer struct{ w *World }

// Trials are the demo machine's trial figures: seconds per picture, the
// encoder's start, where it read.
var Trials = map[settings.Placement]setupflow.Trial{
	settings.PlacementGPU:    {Measurement: settings.Measurement{PictureS: 1.42, StartS: 2.9, Device: "GPU 0 (NVIDIA GeForce RTX 4080)", Tokens: 1024}},
	settings.PlacementCPU:    {Measurement: settings.Measurement{PictureS: 11.8, StartS: 0.4, Device: "this PC's CPU, 8 threads", Tokens: 300}},
	settings.PlacementRemote: {Measurement: settings.Measurement{PictureS: 2.61, StartS: 3.4, Device: "the second PC 192.168.1.20 (NVIDIA GeForce RTX 3060)", Host: "192.168.1.20", Tokens: 1024}},
}

// Measure plays a trial in six delays (fails with Fail["measure-<place>"],
// waits for Cancel with HangAt "measure").
func (m measurer) Measure(ctx context.Context, p settings.Placement, in setupflow.Install, cfg string, remote *settings.Remote, progress func(setupflow.TrialProgress)) (*setupflow.Trial, error) {
	m.w.record("measure %s", p)
	if p == settings.PlacementRemote && remote != nil {
		m.w.record("measure remote on %s", remote.Host)
	}
	t0 := time.Now()
	for i := 0; i < 6; i++ {
		phase := "starting"
		if i >= 2 {
			phase = "reading"
		}
		progress(setupflow.TrialProgress{Phase: phase, Elapsed: time.Since(t0), Bound: 5 * time.Minute})
		if err := m.w.wait(ctx, 1); err != nil {
			return nil, err
		}
	}
	if m.w.HangAt == "measure" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := m.w.fail("measure-" + string(p)); err != nil {
		return nil, err
	}
	if p == settings.PlacementRemote && !m.w.Paired {
		return nil, &measure.Error{Kind: measure.KindNotPaired, Msg: "no second PC is paired yet: pair one on the second-PC page first"}
	}
	t := Trials[p]
	t.When = settings.WhenString(time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC))
	t.StrataVersion = "0.9.3"
	return &t, nil
}

// ---- Remote ----

type remote struct{ w *World }

// HostKey is the second PC's canned host key.
var HostKey = setupflow.HostKey{Type: "ssh-ed25519", Fingerprint: "SHA256:3vTq5m0x2bq7yWcWkJ6r0Rj1mJpQYVx8nW2c4oDkq9E"}

// DemoMAC is the network card pairing "finds" on the demo second PC.
const DemoMAC = "a8:a1:59:3c:27:e1"

func (r remote) Suggestions() []setupflow.HostSuggestion {
	return []setupflow.HostSuggestion{
		{Alias: "gaming-laptop", HostName: "192.168.1.20", User: "sam"},
		{Alias: "nas", HostName: "192.168.1.5", User: "admin", Port: 2222},
	}
}

func (r remote) Probe(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*setupflow.RemoteReport, error) {
	r.w.record("remote-probe %s", t)
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 0, Text: "Connecting to " + t.String()})
	if err := r.w.wait(ctx, 1); err != nil {
		return nil, err
	}
	if err := r.w.fail("remote-probe"); err != nil {
		return nil, err
	}
	if t.Paired != nil {
		// Paired: its host key is pinned, and the companion's key signs in.
		r.w.record("remote-probe with the companion's key %s", t.Paired.KeyFile)
	} else {
		k := HostKey
		k.Address = t.String()
		r.w.mu.Lock()
		r.w.HostKeyAsked++
		r.w.mu.Unlock()
		if !confirm(ctx, k) {
			return nil, setupflow.ErrHostKeyRejected
		}
	}
	if err := r.w.steps(ctx, "remote-probe", []string{"Asking its GPUs", "Measuring the round trip", "Measuring throughput (4 MB each way)"}, progress); err != nil {
		return nil, err
	}
	return &setupflow.RemoteReport{
		Address: t.String(), OS: "windows", Arch: "amd64",
		GPUs:  []nvsmi.GPU{{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144, FreeMiB: 5790, Driver: "581.57"}},
		RTTms: 0.9, UpMBps: 112, DownMBps: 111,
	}, nil
}

func (r remote) Pair(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*settings.Remote, error) {
	r.w.record("pair %s password=%t agent=%t", t, t.Password != "", t.UseAgent)
	k := HostKey
	k.Address = t.String()
	if !confirm(ctx, k) {
		return nil, setupflow.ErrHostKeyRejected
	}
	if err := r.w.steps(ctx, "pair", []string{"Making the companion's own key", "Installing it on the second PC", "Logging in with the new key alone"}, progress); err != nil {
		return nil, err
	}
	if err := r.w.fail("pair"); err != nil {
		return nil, err
	}
	r.w.mu.Lock()
	r.w.Paired = true
	r.w.mu.Unlock()
	host, user := t.Address, t.User
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		user, host = host[:i], host[i+1:]
	}
	return &settings.Remote{Host: host, User: user, HostKey: k.Type + " AAAAC3NzaC1lZDI1NTE5AAAAIDemoKey", KeyFile: "/etc/strata-companion/secrets/relay_ed25519", MAC: DemoMAC}, nil
}

func (r remote) Prepare(ctx context.Context, rm *settings.Remote, in setupflow.Install, cfg string, progress func(setupflow.Progress)) (*settings.Remote, error) {
	r.w.record("prepare %s", rm.Host)
	if err := r.w.steps(ctx, "prepare", []string{"Copying the agent (7.9 MB)", "Copying the mmproj (851 MB)", "Copying the vocabulary stub (11 MB)", "Starting the encoder: waiting for READY"}, progress); err != nil {
		return nil, err
	}
	if err := r.w.fail("prepare"); err != nil {
		return nil, err
	}
	n := *rm
	n.RemoteDir, n.EncoderPath, n.NEmbd, n.OS, n.Arch = `C:\Users\sam\StrataVision`, "strata-vision.exe", 2560, "windows", "amd64"
	return &n, nil
}

func (r remote) Unpair(ctx context.Context, rm *settings.Remote) error {
	r.w.record("unpair %s", rm.Host)
	r.w.mu.Lock()
	r.w.Paired = false
	r.w.mu.Unlock()
	return nil
}

// ---- Config planner (in memory) ----

type planner struct{ w *World }

type plan struct {
	w          *World
	path, diff string
	next       string
}

func (p plan) Diff() string { return p.diff }

func (p plan) Apply() (string, error) {
	p.w.record("write %s", p.path)
	if err := p.w.fail("write"); err != nil {
		return "", err
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	b := p.path + ".bak-1"
	p.w.Backups[b] = p.w.ConfigText
	p.w.ConfigText = p.next
	return b, nil
}

func (pl planner) Plan(ctx context.Context, path string, c setupflow.VisionChoice) (setupflow.Plan, error) {
	pl.w.record("plan %s %s %s", path, c.Placement, c.Host)
	if err := pl.w.fail("plan"); err != nil {
		return nil, err
	}
	pl.w.mu.Lock()
	cur := pl.w.ConfigText
	pl.w.mu.Unlock()
	next := RenderConfig(c)
	return plan{w: pl.w, path: path, next: next, diff: LineDiff(cur, next, path)}, nil
}

func (pl planner) Restore(path, backup string) error {
	pl.w.record("restore %s %s", path, backup)
	pl.w.mu.Lock()
	defer pl.w.mu.Unlock()
	t, ok := pl.w.Backups[backup]
	if !ok {
		return fmt.Errorf("no backup %s", backup)
	}
	pl.w.ConfigText = t
	return nil
}

func (pl planner) Current(string) (settings.Placement, error) { return settings.PlacementGPU, nil }

// RenderConfig is the canned config with vision set as c says.
func RenderConfig(c setupflow.VisionChoice) string {
	head := "{\n  \"exe\": \"engine/strata\",\n"
	tail := "  \"port\": 8080,\n  \"log\": \"strata-iq2_xs.log\""
	args := `  "args": ["--ctx", "32768", "--vision", "--vram-reserve-mib", "700"],` + "\n"
	model := `    "model": "models/Qwen3.5-35B-A3B-IQ2_XS-00001-of-00002.gguf",` + "\n"
	switch c.Placement {
	case settings.PlacementOff:
		return head + `  "args": ["--ctx", "32768"],` + "\n" + tail + "\n}\n"
	case settings.PlacementCPU:
		return head + args + tail + ",\n  \"vision\": {\n    \"mmproj\": \"models/mmproj-Q8_0.gguf\",\n" + model + "    \"gpu\": false,\n    \"max_tokens\": 300,\n    \"threads\": 8\n  }\n}\n"
	case settings.PlacementRemote:
		return head + args + tail + ",\n  \"env\": {\"STRATA_COMPANION_SETTINGS\": \"/etc/strata-companion/settings.json\"},\n  \"vision\": {\n    \"exe\": \"/opt/strata-companion/strata-vision-relay\",\n    \"mmproj\": \"models/mmproj-BF16.gguf\",\n" + model + "    \"gpu\": true,\n    \"max_tokens\": 1024,\n    \"remote\": true\n  }\n}\n"
	}
	return baseConfig
}

// LineDiff is a small unified-style diff of two texts (whole-file hunk).
func LineDiff(a, b, name string) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(strings.TrimSuffix(a, "\n"), "\n"), strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// Longest common subsequence, fine for config-sized files.
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			out.WriteString("  " + al[i] + "\n")
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + al[i] + "\n")
			i++
		default:
			out.WriteString("+ " + bl[j] + "\n")
			j++
		}
	}
	return out.String()
}

// ---- Service ----

type service struct{ w *World }

func (s service) Status(ctx context.Context) (setupflow.ServiceStatus, error) {
	s.w.record("status")
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	st := setupflow.ServiceStatus{Installed: s.w.Installed, Running: s.w.Running, Seq: 41}
	switch {
	case s.w.Running:
		st.Describe, st.ServerPhase = "Strata is ready on http://127.0.0.1:8080/v1", "ready"
	case s.w.Installed:
		st.Describe = "the service is installed but stopped"
	default:
		st.Describe = "the service is not installed"
	}
	return st, nil
}

func (s service) Install(ctx context.Context, root, cfg string) error {
	s.w.record("install %s %s", root, cfg)
	if err := s.w.wait(ctx, 1); err != nil {
		return err
	}
	if err := s.w.fail("install"); err != nil {
		return err
	}
	s.w.mu.Lock()
	s.w.Installed = true
	s.w.mu.Unlock()
	return nil
}

func (s service) Uninstall(ctx context.Context) error {
	s.w.record("uninstall")
	s.w.mu.Lock()
	s.w.Installed, s.w.Running = false, false
	s.w.mu.Unlock()
	return nil
}

func (s service) Start(ctx context.Context, restart bool) error {
	s.w.record("start restart=%t", restart)
	if err := s.w.fail("start"); err != nil {
		return err
	}
	s.w.mu.Lock()
	s.w.Running = true
	s.w.mu.Unlock()
	return nil
}

// StartLines is the canned server start, as Strata prints it.
var StartLines = []struct{ Phase, Line string }{
	{"starting", "[strata] starting the engine: engine/strata --ctx 32768 --vision --vram-reserve-mib 700"},
	{"starting", "[strata] loading the model (2 shards, 11.2 GiB) ..."},
	{"starting", "[strata] filling the GPU's expert cache (3641 experts, 6.96 GiB of VRAM) ..."},
	{"starting", "strata generate: expert cache 3641 slots, 6.96 GiB of VRAM; policy is lfu"},
	{"starting", "[strata] starting the vision encoder ..."},
	{"starting", "[strata-vision-relay] second PC 192.168.1.20 reachable (0.9 ms); encoder ready (RTX 3060 Laptop GPU)"},
	{"ready", "ready: http://127.0.0.1:8080/v1  (OpenAI: /v1/chat/completions, context 32768 tokens, images on, API key required)"},
}

func (s service) Follow(ctx context.Context, since uint64, progress func(setupflow.Progress)) error {
	s.w.record("follow %d", since)
	ferr := s.w.fail("follow")
	for i, l := range StartLines {
		if s.w.HangAt == "follow" && i == 3 {
			<-ctx.Done()
			return ctx.Err()
		}
		if ferr != nil && i == 3 {
			progress(setupflow.Progress{Phase: "failed", LogLine: "[strata] the engine stopped (exit code 3221225477)", Fraction: -1, Text: "Strata stopped while loading"})
			return ferr
		}
		progress(setupflow.Progress{Phase: l.Phase, LogLine: l.Line, Fraction: float64(i+1) / float64(len(StartLines)), Text: strings.TrimPrefix(l.Line, "[strata] ")})
		if err := s.w.wait(ctx, 2); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// ---- Settings and login ----

type store struct{ w *World }

func (s store) Load() (*settings.Settings, error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.Settings == nil {
		return &settings.Settings{}, nil
	}
	c := *s.w.Settings
	return &c, nil
}

func (s store) Save(n *settings.Settings) error {
	s.w.record("settings-save vision=%s", n.Vision)
	if err := s.w.fail("settings"); err != nil {
		return err
	}
	c := *n
	s.w.mu.Lock()
	s.w.Settings = &c
	s.w.mu.Unlock()
	return nil
}

func (s store) Remove() error {
	s.w.record("settings-remove")
	s.w.mu.Lock()
	s.w.Settings = nil
	s.w.mu.Unlock()
	return nil
}

type login struct{ w *World }

func (l login) Enabled() bool {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.Login
}

func (l login) SetEnabled(on bool) error {
	l.w.record("login %t", on)
	l.w.mu.Lock()
	l.w.Login = on
	l.w.mu.Unlock()
	return nil
}

// MakeInstall creates a minimal Strata install on disk at root (serve/,
// engine/, .venv, a config), for tests and the demo. It returns root.
func MakeInstall(root string) (string, error) {
	for _, d := range []string{"serve", "engine", ".venv/bin", "models"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", err
		}
	}
	files := map[string]string{
		"serve/server.py":         "# stand-in\n",
		"engine/strata":           "",
		"engine/strata-vision":    "",
		".venv/bin/python":        "",
		"strata-iq2_xs.json":      baseConfig,
		"run-iq2_xs.sh":           "#!/bin/sh\n.venv/bin/python serve/server.py --engine strata --config strata-iq2_xs.json\n",
		"models/mmproj-BF16.gguf": "",
		"models/Qwen3.5-35B-A3B-IQ2_XS-00001-of-00002.gguf": "",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	return root, nil
}

// ErrDemo is a canned failure.
var ErrDemo = errors.New("demo failure")
