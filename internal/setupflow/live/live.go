// Package live adapts setupflow's interfaces to the companion's real
// libraries: stratainstall (finding Strata), probe (this PC and the
// recommendation), strataconfig (the config edit), the companion settings
// file, strata-service (installed and started as a program beside this one)
// and its control API (following Strata's start). Both strata-setup and
// `strata-service setup --cli` use it.
package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// Options tune the adapters (tests and flags).
type Options struct {
	// StrataRoot and ConfigPath come from --strata-root / --config.
	StrataRoot, ConfigPath string
	// SettingsPath is the companion settings file (default: its usual place).
	SettingsPath string
	// ServiceExe is strata-service (default: beside this program, else PATH).
	ServiceExe string
	// RelayExe is strata-vision-relay (default: beside this program).
	RelayExe string
	// Login is "start tray at login" (nil: none offered).
	Login setupflow.LoginItem
	// Confirm asks about unknown host keys.
	Confirm setupflow.ConfirmHostKey
}

// Deps returns the real adapters.
func Deps(o Options) setupflow.Deps {
	if o.SettingsPath == "" {
		o.SettingsPath = locations.SettingsFile()
	}
	pr := &Prober{}
	svc := &Service{Exe: o.ServiceExe}
	remote := NewRemote()
	return setupflow.Deps{
		Finder:   Finder{Root: o.StrataRoot, Config: o.ConfigPath, SettingsPath: o.SettingsPath},
		Prober:   pr,
		Remote:   remote,
		Lenders:  remote,
		Lending:  &Lending{Exe: o.ServiceExe},
		Config:   Planner{SettingsPath: o.SettingsPath, RelayExe: o.RelayExe, Prober: pr},
		Service:  svc,
		Settings: SettingsFile{Path: o.SettingsPath, RelayExe: o.RelayExe},
		Login:    o.Login,
		Confirm:  o.Confirm,
		Measurer: &Measurer{SettingsPath: o.SettingsPath, RelayExe: o.RelayExe, Prober: pr, Service: svc},
	}
}

// ---- Finder ----

// Finder finds installs with stratainstall.
type Finder struct {
	Root, Config, SettingsPath string
	// SearchDirs replaces the usual places (tests).
	SearchDirs []string
}

func convertInstall(in stratainstall.Install) setupflow.Install {
	out := setupflow.Install{Root: in.Root, Configs: in.Configs, InUse: in.ConfigInUse, Python: in.Python}
	if in.Python == "" {
		out.Problems = append(out.Problems, "it has no Python venv (.venv): run Strata's setup (setup.sh or START-HERE.bat) in that folder first")
	}
	if len(in.Configs) == 0 {
		out.Problems = append(out.Problems, "it has no model config (strata-<tag>.json): run Strata's setup to download a model first")
	}
	return out
}

func (f Finder) Find(ctx context.Context) ([]setupflow.Install, error) {
	s, _ := settings.Load(f.SettingsPath)
	found, err := stratainstall.Find(ctx, stratainstall.Options{Root: f.Root, Config: f.Config, Settings: s, SearchDirs: f.SearchDirs})
	if err != nil {
		return nil, err
	}
	out := make([]setupflow.Install, 0, len(found))
	for _, in := range found {
		out = append(out, convertInstall(in))
	}
	return out, nil
}

func (f Finder) Inspect(ctx context.Context, root string) (setupflow.Install, error) {
	found, err := stratainstall.Find(ctx, stratainstall.Options{Root: root})
	if err != nil {
		return setupflow.Install{}, err
	}
	return convertInstall(found[0]), nil
}

// ---- Prober ----

// Prober probes this PC with the probe library; it keeps the last report for
// Recommend and for the config's --vram-reserve-mib choice.
type Prober struct {
	Options probe.Options
	mu      sync.Mutex
	last    *probe.Report
}

// convertGPUs keeps each card's record in nvidia-smi's shape (a card the
// probe found elsewhere, in sysfs or the registry, fills the same fields);
// the probe's Vendor and Source stay the probe's.
func convertGPUs(gs []probe.GPU) []nvsmi.GPU {
	var out []nvsmi.GPU
	for _, g := range gs {
		out = append(out, g.GPU)
	}
	return out
}

func (p *Prober) Probe(ctx context.Context, progress func(setupflow.Progress)) (*setupflow.Machine, error) {
	progress(setupflow.Progress{Step: "probe", Fraction: -1, Text: "Asking nvidia-smi and the OS about the GPUs, CPU and memory"})
	r := probe.Probe(ctx, p.Options)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.last = r
	p.mu.Unlock()
	m := &setupflow.Machine{GPUs: convertGPUs(r.GPUs), CPU: r.CPU.Model, Cores: r.CPU.Cores, Threads: r.CPU.Threads,
		RAMMiB: r.RAM.TotalMiB, FreeMiB: r.RAM.FreeMiB}
	for _, f := range r.Problems {
		if f.Severity == probe.SeverityInfo {
			continue
		}
		w := f.What
		if f.Fix != "" {
			w += " " + f.Fix
		}
		m.Warnings = append(m.Warnings, w)
	}
	progress(setupflow.Progress{Step: "probe", Fraction: 1, Text: "Done"})
	return m, nil
}

// VRAMTotalMiB is the serving GPU's memory from the last probe (0: unknown).
func (p *Prober) VRAMTotalMiB() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	if p.last != nil {
		for _, g := range p.last.GPUs {
			if g.TotalMiB > best {
				best = g.TotalMiB
			}
		}
	}
	return best
}

func (p *Prober) Recommend(local *setupflow.Machine, r *setupflow.RemoteReport) setupflow.Recommendation {
	return p.RecommendMeasured(local, r, nil)
}

// RecommendMeasured is Recommend quoting the figures measured here
// (probe.RecommendMeasured) instead of the estimates of those places.
func (p *Prober) RecommendMeasured(local *setupflow.Machine, r *setupflow.RemoteReport, measured *settings.Measured) setupflow.Recommendation {
	p.mu.Lock()
	rep := p.last
	p.mu.Unlock()
	var facts *probe.RemoteFacts
	if r != nil {
		facts = &probe.RemoteFacts{Host: r.Address, Reachable: true, RTT: msDuration(r.RTTms),
			UpBytesPerSec: r.UpMBps * 1e6, DownBytesPerSec: r.DownMBps * 1e6}
		for _, g := range r.GPUs {
			facts.GPUs = append(facts.GPUs, probe.GPU{GPU: g, Vendor: "NVIDIA", Source: probe.SourceNvidiaSMI})
		}
	}
	rec := probe.RecommendMeasured(rep, facts, measured)
	return ConvertRecommendation(rec, facts != nil)
}

// joinNote adds a sentence to an option's note.
func joinNote(note, more string) string {
	note = strings.TrimSpace(note)
	if note == "" {
		return more
	}
	if !strings.HasSuffix(note, ".") {
		note += "."
	}
	return note + " " + more
}

// ConvertRecommendation turns the probe's recommendation into the flow's.
func ConvertRecommendation(rec probe.Recommendation, remoteKnown bool) setupflow.Recommendation {
	out := setupflow.Recommendation{Best: rec.Placement, BestDevice: rec.Device, Reason: upperFirst(rec.Reason),
		Basis: "Strata's own measurements (RTX 5080 server, RTX 3060 second PC), scaled to this PC and the measured link"}
	haveRemote := false
	for _, e := range rec.Estimates {
		// The label and what it costs or frees come from the placements
		// table: this PC's GPU takes VRAM, the others free it; pictures
		// read through the relay keep text waiting meanwhile.
		info := e.Placement.Info()
		o := setupflow.Option{Placement: e.Placement, Device: e.Device, Available: e.Available,
			PictureSeconds: e.PictureSeconds, Note: e.Basis, Label: info.Label, VRAMMiB: -e.FreesMiB}
		if info.UsesVRAM {
			o.VRAMMiB = e.EncoderVRAMMiB
			if e.Device != nil {
				o.Label = fmt.Sprintf("This PC's spare GPU %d", *e.Device)
			}
		}
		if info.ReadsPictures && info.RelayRouted {
			o.Note = joinNote(o.Note, setupflow.TextWaits)
		}
		if info.SecondPC {
			haveRemote = true
			// Without a probed second PC it is still a choice: the next
			// page probes it.
			if !remoteKnown {
				o.Available = true
			}
		}
		if !e.Available {
			o.Why = e.Basis
		}
		out.Options = append(out.Options, o)
	}
	if !haveRemote {
		out.Options = append(out.Options, setupflow.Option{Placement: settings.PlacementRemote, Label: settings.PlacementRemote.Info().Label, Available: true,
			Note: "Reads pictures on another PC's NVIDIA GPU over ssh and frees this GPU's VRAM for Strata; the next page measures it. " + setupflow.TextWaits})
	}
	hasOff := false
	for _, o := range out.Options {
		hasOff = hasOff || o.Placement == settings.PlacementOff
	}
	if !hasOff {
		out.Options = append(out.Options, setupflow.Option{Placement: settings.PlacementOff, Label: settings.PlacementOff.Info().Label, Available: true,
			Note: "Strata answers text only; a picture is refused."})
	}
	for _, w := range rec.Warnings {
		out.Reason += " " + w.What
	}
	return out
}

// ---- Config ----

// Planner plans the change with the backend (a dry run: the exact diff the
// owner will apply) and applies it through the owner (owner.go).
type Planner struct {
	SettingsPath string
	RelayExe     string
	Prober       *Prober
	// Client reaches the service (default controlapi.NewClient).
	Client func() (*controlapi.Client, error)
}

func (p Planner) owner() owner {
	o := owner{SettingsPath: p.SettingsPath, RelayExe: p.RelayExe, Client: p.Client}
	if p.Prober != nil {
		o.VRAM = p.Prober.VRAMTotalMiB
	}
	return o
}

func (p Planner) Plan(ctx context.Context, path string, c setupflow.VisionChoice) (setupflow.Plan, error) {
	o := p.owner()
	req := visionRequest(c)
	dry := req
	dry.DryRun = true
	// The preview is computed here (read only), as the owner would.
	res, err := o.local(path).SetVision(ctx, dry)
	if err != nil {
		return nil, err
	}
	return &ownerPlan{o: o, path: path, req: req, diff: res.Diff, notes: res.Notes}, nil
}

// Restore puts backup back over path (the exact file Apply replaced, not
// merely the newest backup), through the owner.
func (p Planner) Restore(path, backup string) error { return p.owner().restore(path, backup) }

func (p Planner) Current(path string) (settings.Placement, error) { return p.owner().current(path) }

// ---- Settings ----

// SettingsFile is the companion settings file; changes go through the
// owner (owner.go).
type SettingsFile struct {
	Path     string
	RelayExe string
	// Client reaches the service (default controlapi.NewClient).
	Client func() (*controlapi.Client, error)
}

func (s SettingsFile) Load() (*settings.Settings, error) { return settings.Load(s.Path) }
func (s SettingsFile) Save(n *settings.Settings) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.owner().saveSettings(ctx, n)
}

// Remove deletes the settings file (the rollback of a first setup, when
// the service this setup installed is being removed as well).
func (s SettingsFile) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.owner().removeSettings(ctx)
}

func (s SettingsFile) owner() owner {
	return owner{SettingsPath: s.Path, RelayExe: s.RelayExe, Client: s.Client}
}

// besideSelf is name next to this program, else name itself (PATH).
func besideSelf(name string) string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name+exeSuffix)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return name + exeSuffix
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
