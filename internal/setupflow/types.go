// Package setupflow is the first-run wizard's flow as a state machine, with no
// GUI import: the fyne wizard (wizard/) and the terminal setup
// (strata-service setup --cli) both drive it, and its tests drive it with
// stand-ins. Everything it needs from the outside world comes through the
// small interfaces below (restic's pattern: logic behind an interface, the
// UI implements the printer); internal/setupflow/live adapts them to the
// companion's libraries.
//
// The Flow (flow.go) holds only the pages and the one long operation; it
// composes one step per part of the wizard, each with its own state and
// tests: FindStep (find.go), ChoiceStep (choice.go), SecondPCStep
// (secondpc.go), MeasureStep (measure.go) and ApplyStep (apply.go). A page
// drives its step (flow.SecondPC.Pair); a step reads what another settled
// through a small interface handed to it when the flow is built.
package setupflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/settings"
)

// Page is one step of the wizard.
type Page int

const (
	PageWelcome Page = iota
	PageFindStrata
	PageThisPC
	PagePlacement
	PageSecondPC
	PageReview
	PageApply
	PageDone
)

var pageNames = []string{"welcome", "strata", "this-pc", "placement", "remote", "review", "apply", "done"}

// String is the page's name as --page takes it.
func (p Page) String() string {
	if p < 0 || int(p) >= len(pageNames) {
		return fmt.Sprintf("page(%d)", int(p))
	}
	return pageNames[p]
}

// Title is the page's heading, for people.
func (p Page) Title() string {
	switch p {
	case PageWelcome:
		return "Welcome"
	case PageFindStrata:
		return "Find Strata"
	case PageThisPC:
		return "This PC"
	case PagePlacement:
		return "Where should pictures be read?"
	case PageSecondPC:
		return "Second PC"
	case PageReview:
		return "Review"
	case PageApply:
		return "Apply"
	case PageDone:
		return "Done"
	}
	return p.String()
}

// ParsePage reads a page name (as String gives it, plus a few aliases).
func ParsePage(s string) (Page, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, n := range pageNames {
		if s == n {
			return Page(i), nil
		}
	}
	switch s {
	case "second-pc", "secondpc", "second":
		return PageSecondPC, nil
	case "vision", "where":
		return PagePlacement, nil
	case "find", "find-strata", "install":
		return PageFindStrata, nil
	case "thispc", "this", "probe":
		return PageThisPC, nil
	}
	return 0, fmt.Errorf("there is no setup page %q; pages: welcome, strata, this-pc, placement, remote", s)
}

// Install is one Strata install found on this PC.
type Install struct {
	Root string
	// Configs are the strata-<tag>.json files; InUse is the one the newest
	// run script names ("" when that cannot be told).
	Configs []string
	InUse   string
	Python  string
	// Problems say what is missing ("no Python venv at ROOT/.venv; run setup.py").
	Problems []string
}

// Usable reports whether the install can be run (nothing missing).
func (i Install) Usable() bool { return len(i.Problems) == 0 && len(i.Configs) > 0 }

// Finder finds Strata installs.
type Finder interface {
	// Find looks in the usual places.
	Find(ctx context.Context) ([]Install, error)
	// Inspect reads one folder the user picked ("Browse...").
	Inspect(ctx context.Context, root string) (Install, error)
}

// Machine is what the probe found on this PC.
type Machine struct {
	// GPUs are the cards the probe found, each in nvidia-smi's record (the
	// one GPU record, as the probe and the agent read it; a card found in
	// sysfs or the registry fills the same fields).
	GPUs     []nvsmi.GPU
	CPU      string
	Cores    int
	Threads  int
	RAMMiB   int
	FreeMiB  int
	Warnings []string // "driver 551.23 is older than Strata needs (580)"
}

// Option is one placement with its cost, from the probes.
type Option struct {
	Placement settings.Placement
	Device    *int // GPU index for "gpu" on a second card
	Label     string
	// Available is false when the placement cannot work here; Why says why.
	Available bool
	Why       string
	// PictureSeconds is the expected time for one 1024x1024 picture, 0 when unknown.
	PictureSeconds float64
	// VRAMMiB is the VRAM this placement costs Strata's GPU (positive) or
	// frees compared with the GPU encoder (negative); 0 for none.
	VRAMMiB int
	// Note is the short explanation shown under the option.
	Note string
	// Measured is the last trial picture read there (this run's, else the
	// one kept in the settings; ChoiceStep.Recommendation fills it in): its
	// figure replaces the estimate wherever the option's time is shown.
	Measured *settings.Measurement
}

// Picture is the option's time per picture as people read it
// (settings.ShownPicture: the measured figure once there is one).
func (o Option) Picture() settings.PictureFigure {
	return settings.ShownPicture(o.PictureSeconds, o.Measured)
}

// Figures are the option's figures in words, the one wording the window
// (wizard/pages) and the terminal (service/termsetup) show under or after
// its label: "about 1.6 s per picture" (or, once measured, "0.78 s per
// picture, measured here", "start 0.40 s"), "uses 1.4 GB of this GPU's
// VRAM" or "frees 1.4 GB of VRAM for Strata"; none for a figure that is
// unknown or 0. Each joins them in its own way.
func (o Option) Figures() []string {
	var parts []string
	pic := o.Picture()
	if w := pic.Words(); w != "" {
		parts = append(parts, w)
	}
	if m := pic.Measured; m != nil {
		parts = append(parts, "start "+settings.Secs(m.StartS))
	}
	switch {
	case o.VRAMMiB > 0:
		parts = append(parts, fmt.Sprintf("uses %.1f GB of this GPU's VRAM", float64(o.VRAMMiB)/1024))
	case o.VRAMMiB < 0:
		parts = append(parts, fmt.Sprintf("frees %.1f GB of VRAM for Strata", float64(-o.VRAMMiB)/1024))
	}
	return parts
}

// Recommendation is every placement with its figures, and the one that fits.
type Recommendation struct {
	Best settings.Placement
	// BestDevice is the GPU for Best when it is a spare GPU (nil otherwise).
	BestDevice *int
	Reason     string
	Options    []Option
	// Basis says what the estimates rest on.
	Basis string
}

// IsBest reports whether o is the recommended option.
func (r Recommendation) IsBest(o Option) bool {
	if o.Placement != r.Best {
		return false
	}
	if o.Device == nil || r.BestDevice == nil {
		return o.Device == nil && r.BestDevice == nil
	}
	return *o.Device == *r.BestDevice
}

// Option returns the option for p.
func (r Recommendation) Option(p settings.Placement) (Option, bool) {
	for _, o := range r.Options {
		if o.Placement == p {
			return o, true
		}
	}
	return Option{}, false
}

// Prober probes this PC and recommends a placement.
type Prober interface {
	Probe(ctx context.Context, progress func(Progress)) (*Machine, error)
	// Recommend uses the second PC's report when there is one (nil otherwise).
	Recommend(local *Machine, remote *RemoteReport) Recommendation
}

// MeasuredProber is a Prober whose recommendation can quote the figures
// measured here instead of its estimates (the live one, through
// probe.RecommendMeasured): the Pictures page's reason then gives no
// estimate for a place that was measured.
type MeasuredProber interface {
	RecommendMeasured(local *Machine, remote *RemoteReport, measured *settings.Measured) Recommendation
}

// RemoteTarget is how to reach the second PC.
type RemoteTarget struct {
	Address string // [user@]host[:port] or a ~/.ssh/config Host alias
	User    string
	// Password is the user's own, used once for pairing; never stored or logged.
	Password string
	UseAgent bool
	// StrataRoot is the chosen Strata install (the flow fills it, not the
	// page): pairing allows its encoder build on the second PC.
	StrataRoot string
	// Paired is the paired second PC when the target is that PC (the flow
	// fills it): the probe signs in with the companion's own key too, and
	// asks its agent what the key may not run itself (after a pairing by
	// code, the only way in).
	Paired *settings.Remote
}

func (t RemoteTarget) String() string {
	a := t.Address
	if t.User != "" && !strings.Contains(a, "@") {
		a = t.User + "@" + a
	}
	return a
}

// HostSuggestion is a Host entry from ~/.ssh/config.
type HostSuggestion struct {
	Alias    string
	HostName string
	User     string
	Port     int
}

// HostKey is an unknown host's key, shown to the user to confirm.
type HostKey struct {
	Address     string
	Type        string
	Fingerprint string // SHA256:...
}

// RemoteReport is what the second PC's probe found.
type RemoteReport struct {
	Address  string
	OS, Arch string
	GPUs     []nvsmi.GPU
	RTTms    float64
	// MBps both ways over the ssh connection.
	UpMBps, DownMBps float64
	PictureSeconds   float64
	Problems         []string
}

// FreeVRAMMiB is the most free VRAM on one of its GPUs.
func (r *RemoteReport) FreeVRAMMiB() int {
	best := 0
	for _, g := range r.GPUs {
		if g.FreeMiB > best {
			best = g.FreeMiB
		}
	}
	return best
}

// GPUName is its first GPU's name, or "no NVIDIA GPU".
func (r *RemoteReport) GPUName() string {
	if len(r.GPUs) == 0 {
		return "no NVIDIA GPU"
	}
	return r.GPUs[0].Name
}

// ConfirmHostKey asks the user whether to trust an unknown host key. It
// blocks until the user answers or ctx ends.
type ConfirmHostKey func(ctx context.Context, key HostKey) bool

// RemoteProber reaches, measures, pairs and prepares the second PC.
type RemoteProber interface {
	Suggestions() []HostSuggestion
	Probe(ctx context.Context, t RemoteTarget, confirm ConfirmHostKey, progress func(Progress)) (*RemoteReport, error)
	// Pair makes the companion's own key, installs it on the second PC and pins
	// its host key; the result carries Host, Port, User, HostKey, KeyFile.
	Pair(ctx context.Context, t RemoteTarget, confirm ConfirmHostKey, progress func(Progress)) (*settings.Remote, error)
	// Prepare copies the agent, the mmproj and the vocabulary stub and checks
	// that the encoder starts; it fills RemoteDir, EncoderPath, NEmbd, OS, Arch.
	Prepare(ctx context.Context, r *settings.Remote, install Install, configPath string, progress func(Progress)) (*settings.Remote, error)
	// Unpair removes what Pair installed (Cancel before Apply changes nothing).
	Unpair(ctx context.Context, r *settings.Remote) error
}

// VisionChoice is the edit to make to the Strata config.
type VisionChoice struct {
	Placement settings.Placement
	Device    *int
	Threads   int
	Host      string // [user@]host[:port], remote only
}

// Plan is a computed, not yet written, config change.
type Plan interface {
	// Diff is the exact change, in unified diff form ("" when nothing changes).
	Diff() string
	// Apply writes it; backup is the file to restore from.
	Apply() (backup string, err error)
}

// ConfigPlanner plans and writes the Strata config.
type ConfigPlanner interface {
	Plan(ctx context.Context, configPath string, c VisionChoice) (Plan, error)
	// Restore puts backup back over configPath.
	Restore(configPath, backup string) error
	// Current reads where vision runs now in configPath.
	Current(configPath string) (settings.Placement, error)
}

// ServiceStatus is the OS service as found before Apply.
type ServiceStatus struct {
	Installed bool
	Running   bool
	// ServerPhase is the Strata server's phase when the service runs.
	ServerPhase string
	// Seq is the newest event's sequence number; Follow starts after it.
	Seq uint64
	// Unknown: the state could not be read (a rollback then removes nothing).
	Unknown bool
	// Describe is a line for the Review page ("installed, running 0.3.0").
	Describe string
}

// Service installs and runs strata-service and follows Strata's start.
type Service interface {
	Status(ctx context.Context) (ServiceStatus, error)
	// Install installs the service, or updates an installed one.
	Install(ctx context.Context, strataRoot, configPath string) error
	Uninstall(ctx context.Context) error
	// Start starts the service (and so the server), or restarts the server
	// when the service already runs.
	Start(ctx context.Context, restart bool) error
	// Follow reports the server's start (phase, log lines) and returns nil once
	// it is ready, or an error that says what failed and what to do.
	Follow(ctx context.Context, since uint64, progress func(Progress)) error
}

// SettingsStore loads and saves the companion's settings.
type SettingsStore interface {
	Load() (*settings.Settings, error)
	Save(*settings.Settings) error
	// Remove deletes the file (rollback of a first setup).
	Remove() error
}

// LoginItem is "start the tray at login".
type LoginItem interface {
	Enabled() bool
	SetEnabled(on bool) error
}

// Progress is one update from a long operation.
type Progress struct {
	// Step names the operation ("probe", "pair", "prepare", "apply: write config").
	Step string
	// Fraction is 0..1, or -1 when unknown (an indeterminate bar).
	Fraction float64
	Text     string
	// Phase is the server's phase while following its start.
	Phase string
	// LogLine is one new line of the server's output.
	LogLine string
}

// TextWaits is what Strata does with a picture, in words for the choice of
// where pictures are read: its main repository reads every picture inside its
// request queue, so text waits while a picture is read, wherever it is read
// (docs/strata.md, "More of the server's behaviour"). The relay answers at
// once when pictures are off or the second PC is known to be down, bounds
// each picture by what pictures really take, and gives a picture up at once
// when Strata stops it.
const TextWaits = "Text waits while a picture is read; the relay keeps that wait as short as the picture itself."
