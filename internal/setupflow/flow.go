package setupflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// Errors the UI shows or tests for.
var (
	// ErrBusy: another long operation runs; wait for it or cancel it.
	ErrBusy = errors.New("another step is still running; wait for it or press Cancel")
	// ErrCancelled: the user cancelled the wizard.
	ErrCancelled = errors.New("setup was cancelled")
	// ErrHostKeyRejected: the user did not trust the second PC's host key.
	ErrHostKeyRejected = errors.New("the second PC's host key was not accepted, so nothing was sent to it")
)

// Deps are the flow's connections to the world.
type Deps struct {
	Finder   Finder
	Prober   Prober
	Remote   RemoteProber
	Config   ConfigPlanner
	Service  Service
	Settings SettingsStore
	Login    LoginItem
	// Confirm asks the user about an unknown host key.
	Confirm ConfirmHostKey
	// Measurer reads trial pictures (measure.go); nil: no Measure buttons.
	Measurer Measurer
	// Lenders finds the PCs that lend their GPU and pairs by code (lend.go);
	// nil: the Second PC page has the address only.
	Lenders Lenders
	// Lending is this PC lending its GPU (lending.go); nil: no such role.
	Lending Lending
}

// Options change where the flow starts.
type Options struct {
	// StartPage, when not PageWelcome, opens the wizard there (the tray's
	// "Open setup..." uses PageSecondPC).
	StartPage Page
}

// Review is what the Review page shows.
type Review struct {
	ConfigPath string
	Diff       string // the exact change; "" when the config already says this
	Choice     VisionChoice
	Summary    string // "Pictures: second PC bob@192.168.1.20 (RTX 3060), about 2.9 s each"
	// Notes says what the plan chose on its own (e.g. lazy loading turned
	// off because it is text-only), one sentence each.
	Notes   []string
	Service []string // the service settings, one per line
	// TrayAtLogin is the "start tray at login" box (off unless the user ticks it).
	TrayAtLogin bool
}

// ApplyError is a failure during Apply, with what was put back.
type ApplyError struct {
	Step       string // "install the service", "write the config", "start Strata", ...
	Err        error
	RolledBack []string // what was put back, in words
	// RollbackErr is set when putting something back failed too.
	RollbackErr error
}

func (e *ApplyError) Unwrap() error { return e.Err }

func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "could not %s: %v", e.Step, e.Err)
	if len(e.RolledBack) > 0 {
		b.WriteString(". Put back as it was: " + strings.Join(e.RolledBack, "; "))
	} else if e.RollbackErr == nil {
		b.WriteString(". Nothing was changed")
	}
	if e.RollbackErr != nil {
		fmt.Fprintf(&b, ". Putting things back failed too: %v", e.RollbackErr)
	}
	return b.String()
}

// CancelResult says what Cancel did.
type CancelResult struct {
	// Changed is false when the machine is exactly as before the wizard.
	Changed  bool
	Messages []string
}

// Flow is the wizard's state. Its methods are safe to call from several
// goroutines: a long operation runs without the lock so Back and Cancel can
// stop it.
type Flow struct {
	d Deps

	// Code is pairing by code on the Second PC page (lend.go).
	Code *CodeStep
	// Lend is the role "Lend this PC's GPU to another PC" (lending.go).
	Lend *LendStep

	mu      sync.Mutex
	page    Page
	history []Page
	notice  string

	installs   []Install
	install    *Install
	configPath string

	machine  *Machine
	probeErr error
	rec      Recommendation

	choice  VisionChoice
	target  RemoteTarget
	report  *RemoteReport
	trusted map[string]bool // fingerprints the user accepted in this run

	remote     *settings.Remote // paired (now or before)
	pairedHere bool             // Pair ran in this wizard: Cancel undoes it
	prepared   bool
	pcOpts     SecondPCOptions

	review  *Review
	plan    Plan
	tray    bool
	trayWas bool

	configured bool // the machine was set up before the wizard opened
	prev       *settings.Settings

	// Trial pictures of this run (measure.go).
	trials    map[settings.Placement]*Trial
	trialErrs map[settings.Placement]error

	applied   bool
	applyErr  error
	doneLines []string
	cancelled bool

	// The running long operation.
	op       string
	opGen    uint64
	opCancel context.CancelFunc
	opDone   chan struct{}
}

// New reads the current settings and decides the first page: the Welcome
// page on a new machine, the Placement page ("change where vision runs") on
// one already set up, or opts.StartPage.
func New(ctx context.Context, d Deps, opts Options) (*Flow, error) {
	f := &Flow{d: d, page: PageWelcome, trusted: map[string]bool{}}
	f.Code, f.Lend = newCodeStep(d.Lenders, f), newLendStep(d.Lending)
	prev, err := d.Settings.Load()
	if err != nil {
		return nil, err
	}
	f.prev = prev
	f.pcOpts = SecondPCOptions{IdleStopS: DefaultIdleStopS, FallbackCPU: prev.FallbackCPU != nil && *prev.FallbackCPU}
	if prev.Remote != nil && prev.Remote.Host != "" {
		f.pcOpts.IdleStopS = prev.Remote.IdleStopS
	}
	if d.Login != nil {
		f.trayWas = d.Login.Enabled()
		f.tray = f.trayWas
	}
	if prev.StrataRoot != "" && prev.ConfigPath != "" {
		if in, err := d.Finder.Inspect(ctx, prev.StrataRoot); err == nil && in.Usable() {
			f.configured = true
			f.installs = []Install{in}
			f.install = &f.installs[0]
			f.configPath = prev.ConfigPath
			f.choice.Placement = prev.Vision
			if !prev.Vision.Valid() {
				if p, err := d.Config.Current(prev.ConfigPath); err == nil {
					f.choice.Placement = p
				}
			}
			if prev.Remote != nil && prev.Remote.Host != "" {
				r := *prev.Remote
				f.remote = &r
				f.prepared = r.RemoteDir != ""
				f.target = RemoteTarget{Address: endpointString(r), User: r.User, UseAgent: true}
			}
		}
	}
	start := opts.StartPage
	if start == PageWelcome && f.configured {
		start = PagePlacement
	}
	if start > PageSecondPC {
		start = PagePlacement // Review and later need this run's choices
	}
	if start > PageFindStrata && f.install == nil {
		f.notice = "Strata Companion is not set up yet: first tell it which Strata install to use."
		start = PageFindStrata
	}
	if start == PageSecondPC {
		f.choice.Placement = settings.PlacementRemote
	}
	for p := PageWelcome; p < start; p++ {
		f.history = append(f.history, p)
	}
	f.page = start
	return f, nil
}

func endpointString(r settings.Remote) string {
	s := r.Host
	if r.Port != 0 && r.Port != 22 {
		s = fmt.Sprintf("%s:%d", r.Host, r.Port)
		if strings.Contains(r.Host, ":") {
			s = fmt.Sprintf("[%s]:%d", r.Host, r.Port)
		}
	}
	return s
}

// Page is the current page.
func (f *Flow) Page() Page {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.page
}

// Configured reports whether the machine was set up before the wizard opened.
func (f *Flow) Configured() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.configured
}

// Notice is a one-time message for the first page ("" when none).
func (f *Flow) Notice() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.notice
	f.notice = ""
	return n
}

// Busy names the running long operation, "" when none.
func (f *Flow) Busy() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.op
}

// Cancelled reports whether Cancel ran.
func (f *Flow) Cancelled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

// begin registers a long operation; end must be called when it returns.
func (f *Flow) begin(ctx context.Context, name string, pages ...Page) (context.Context, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancelled {
		return nil, nil, ErrCancelled
	}
	if f.op != "" {
		return nil, nil, ErrBusy
	}
	ok := len(pages) == 0
	for _, p := range pages {
		ok = ok || p == f.page
	}
	if !ok {
		return nil, nil, fmt.Errorf("%s is not part of the %s page", name, f.page.Title())
	}
	ctx, cancel := context.WithCancel(ctx)
	f.opGen++
	gen := f.opGen
	done := make(chan struct{})
	f.op, f.opCancel, f.opDone = name, cancel, done
	return ctx, func() {
		cancel()
		f.mu.Lock()
		if f.opGen == gen {
			f.op, f.opCancel, f.opDone = "", nil, nil
		}
		f.mu.Unlock()
		close(done)
	}, nil
}

// stopOpLocked cancels the running operation and returns its done channel
// (nil when none). The caller holds f.mu.
func (f *Flow) stopOpLocked() chan struct{} {
	if f.op == "" {
		return nil
	}
	f.opCancel()
	done := f.opDone
	f.op, f.opCancel, f.opDone = "", nil, nil
	f.opGen++
	return done
}

// ---- Find Strata ----

// Find looks for Strata installs and selects the one in use.
func (f *Flow) Find(ctx context.Context) ([]Install, error) {
	ctx, end, err := f.begin(ctx, "find Strata", PageFindStrata)
	if err != nil {
		return nil, err
	}
	defer end()
	found, err := f.d.Finder.Find(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	f.installs = found
	f.install = nil
	for i := range f.installs {
		if f.installs[i].Usable() {
			f.selectLocked(i)
			break
		}
	}
	return append([]Install(nil), found...), nil
}

// Browse inspects a folder the user picked and selects it.
func (f *Flow) Browse(ctx context.Context, root string) (Install, error) {
	if strings.TrimSpace(root) == "" {
		return Install{}, errors.New("type the Strata folder (the one holding serve/ and engine/) first")
	}
	ctx, end, err := f.begin(ctx, "inspect "+root, PageFindStrata)
	if err != nil {
		return Install{}, err
	}
	defer end()
	in, err := f.d.Finder.Inspect(ctx, root)
	if err != nil {
		return Install{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.installs {
		if f.installs[i].Root == in.Root {
			f.installs[i] = in
			f.selectLocked(i)
			return in, nil
		}
	}
	f.installs = append(f.installs, in)
	f.selectLocked(len(f.installs) - 1)
	return in, nil
}

// Installs are the installs found so far.
func (f *Flow) Installs() []Install {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Install(nil), f.installs...)
}

// SelectInstall picks installs[i] and its config in use.
func (f *Flow) SelectInstall(i int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= len(f.installs) {
		return fmt.Errorf("there is no install number %d", i+1)
	}
	f.selectLocked(i)
	return nil
}

func (f *Flow) selectLocked(i int) {
	f.install = &f.installs[i]
	f.configPath = f.install.InUse
	if f.configPath == "" && len(f.install.Configs) == 1 {
		f.configPath = f.install.Configs[0]
	}
	f.plan, f.review = nil, nil
}

// SelectConfig picks one of the selected install's configs.
func (f *Flow) SelectConfig(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.install == nil {
		return errors.New("choose a Strata install first")
	}
	for _, c := range f.install.Configs {
		if c == path {
			f.configPath = path
			f.plan, f.review = nil, nil
			return nil
		}
	}
	return fmt.Errorf("%s is not one of the configs of %s", path, f.install.Root)
}

// Selected is the chosen install and config ("" when none).
func (f *Flow) Selected() (Install, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.install == nil {
		return Install{}, "", false
	}
	return *f.install, f.configPath, true
}

// ---- This PC ----

// ProbeLocal probes this PC and computes the recommendation. A failed probe
// is kept as a warning: CPU and off stay possible.
func (f *Flow) ProbeLocal(ctx context.Context, progress func(Progress)) (*Machine, error) {
	ctx, end, err := f.begin(ctx, "probe this PC", PageThisPC, PagePlacement)
	if err != nil {
		return nil, err
	}
	defer end()
	m, err := f.d.Prober.Probe(ctx, orNop(progress))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if m == nil {
		m = &Machine{}
	}
	if err != nil {
		m.Warnings = append(m.Warnings, err.Error())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.machine, f.probeErr = m, err
	f.rec = f.d.Prober.Recommend(m, f.report)
	// Preselect the recommendation, unless a placement is already chosen
	// (the current setting on a configured machine, or the user's pick).
	if !f.choice.Placement.Valid() {
		f.choice.Placement, f.choice.Device = f.rec.Best, f.rec.BestDevice
	}
	return m, err
}

// Machine is the probe's result (nil before ProbeLocal).
func (f *Flow) Machine() *Machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.machine
}

// Recommendation is every placement with its figures.
func (f *Flow) Recommendation() Recommendation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rec
}

// ---- Placement ----

// Choose sets where pictures are read (device: another GPU, nil for the first).
func (f *Flow) Choose(p settings.Placement, device *int) error {
	if !p.Valid() {
		return fmt.Errorf("%q is not a placement (gpu, cpu, remote, off)", p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.rec.Option(p); ok && !o.Available && p != settings.PlacementRemote {
		return fmt.Errorf("%s is not possible on this PC: %s", o.Label, o.Why)
	}
	f.choice.Placement, f.choice.Device = p, device
	f.plan, f.review = nil, nil
	return nil
}

// Choice is the current vision choice.
func (f *Flow) Choice() VisionChoice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.choice
}

// ---- Second PC ----

// Suggestions are the Host entries of ~/.ssh/config.
func (f *Flow) Suggestions() []HostSuggestion { return f.d.Remote.Suggestions() }

// SetTarget sets how to reach the second PC; a new address forgets the last
// probe and pairing.
func (f *Flow) SetTarget(t RemoteTarget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.String() != f.target.String() {
		f.report = nil
		if f.remote != nil && !f.pairedHere {
			f.remote = nil
			f.prepared = false
		}
	}
	f.target = t
	f.plan, f.review = nil, nil
}

// Target is the second PC as entered.
func (f *Flow) Target() RemoteTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.target
}

func (f *Flow) confirm(ctx context.Context, k HostKey) bool {
	f.mu.Lock()
	ok := f.trusted[k.Fingerprint]
	f.mu.Unlock()
	if ok {
		return true
	}
	if f.d.Confirm == nil || !f.d.Confirm(ctx, k) {
		return false
	}
	f.mu.Lock()
	f.trusted[k.Fingerprint] = true
	f.mu.Unlock()
	return true
}

// ProbeRemote reaches and measures the second PC.
func (f *Flow) ProbeRemote(ctx context.Context, progress func(Progress)) (*RemoteReport, error) {
	ctx, end, err := f.begin(ctx, "probe the second PC", PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	f.mu.Lock()
	t := f.target
	t.Paired = f.pairedLocked(t)
	f.mu.Unlock()
	if strings.TrimSpace(t.Address) == "" {
		return nil, errors.New("type the second PC's address (a name or IP address) first")
	}
	r, err := f.d.Remote.Probe(ctx, t, f.confirm, orNop(progress))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.report = r
	if f.machine != nil {
		f.rec = f.d.Prober.Recommend(f.machine, r)
		if o, ok := f.rec.Option(settings.PlacementRemote); ok && o.PictureSeconds > 0 {
			r.PictureSeconds = o.PictureSeconds
		}
	}
	return r, nil
}

// RemoteReport is the last probe of the second PC (nil before one).
func (f *Flow) RemoteReport() *RemoteReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.report
}

// Pair installs the companion's own key on the second PC.
func (f *Flow) Pair(ctx context.Context, progress func(Progress)) (*settings.Remote, error) {
	ctx, end, err := f.begin(ctx, "pair with the second PC", PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	f.mu.Lock()
	t, rep := f.target, f.report
	if f.install != nil {
		t.StrataRoot = f.install.Root
	}
	f.mu.Unlock()
	if rep == nil {
		return nil, errors.New("probe the second PC first, so you can see whether it can read pictures")
	}
	r, err := f.d.Remote.Pair(ctx, t, f.confirm, orNop(progress))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target.Password = "" // used once; never kept longer than needed
	f.remote, f.pairedHere, f.prepared = r, true, false
	if r.OS == "" {
		r.OS, r.Arch = rep.OS, rep.Arch
	}
	if ctx.Err() != nil { // cancelled after the key went in: Cancel/Back undo it
		return nil, ctx.Err()
	}
	return r, nil
}

// Prepare copies what the second PC needs and checks its encoder starts.
func (f *Flow) Prepare(ctx context.Context, progress func(Progress)) error {
	ctx, end, err := f.begin(ctx, "prepare the second PC", PageSecondPC)
	if err != nil {
		return err
	}
	defer end()
	f.mu.Lock()
	r, in, cfg := f.remote, f.install, f.configPath
	f.mu.Unlock()
	if r == nil {
		return errors.New("pair with the second PC first")
	}
	if in == nil {
		return errors.New("choose a Strata install first")
	}
	nr, err := f.d.Remote.Prepare(ctx, r, *in, cfg, orNop(progress))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remote, f.prepared = nr, true
	f.plan, f.review = nil, nil
	return nil
}

// RemoteState is the second PC's pairing as known now.
func (f *Flow) RemoteState() (r *settings.Remote, paired, prepared bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remote == nil {
		return nil, false, false
	}
	c := *f.remote
	return &c, true, f.prepared
}

// SecondPCOptions are the second-PC page's choices besides the PC itself.
type SecondPCOptions struct {
	// IdleStopS stops the second PC's encoder after this many seconds
	// without a picture, giving that PC its VRAM back (0: keep it running).
	IdleStopS int
	// FallbackCPU reads a picture on this PC's CPU when the second PC cannot
	// be reached (off: the picture fails with the reason).
	FallbackCPU bool
}

// DefaultIdleStopS is the idle stop offered on a machine that never chose one.
const DefaultIdleStopS = 600

// describe is the options for the Review page's summary.
func (o SecondPCOptions) describe() string {
	s := "; its encoder stops after " + settings.FormatIdleStop(o.IdleStopS) + " without a picture"
	if o.IdleStopS == 0 {
		s = "; its encoder keeps running between pictures"
	}
	if o.FallbackCPU {
		return s + "; when that PC is off, " + settings.PlacementCPU.Pictures("")
	}
	return s + "; when that PC is off, a picture fails with the reason"
}

// Describe says it for a person: whether the second PC can be woken.
func (w WakeState) Describe() string {
	switch {
	case !w.Paired && w.MAC == "":
		return "Not set up yet: pairing records that PC's network card, so it can be woken when it sleeps."
	case w.MAC == "":
		return "Not set up: pairing found no network card address to wake that PC with (pair again over its wired network to record one)."
	case w.Enabled:
		return "On: the relay wakes that PC (" + w.MAC + ") when a picture comes and it is off."
	default:
		return "Possible, not switched on: that PC's network card " + w.MAC + " is recorded (its BIOS must allow Wake-on-LAN)."
	}
}

// SecondPCOptions are the choices as they stand (from the settings at start).
func (f *Flow) SecondPCOptions() SecondPCOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pcOpts
}

// SetSecondPCOptions changes them; they are written at Apply.
func (f *Flow) SetSecondPCOptions(o SecondPCOptions) error {
	if o.IdleStopS < 0 || o.IdleStopS > settings.MaxIdleStopS {
		return fmt.Errorf("the idle stop must be between 0 (keep the encoder running) and %d seconds (a week)", settings.MaxIdleStopS)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pcOpts != o {
		f.pcOpts = o
		f.plan, f.review = nil, nil
	}
	return nil
}

// WakeState says whether the second PC can be woken: the MAC address pairing
// recorded ("" when none could be found, or nothing is paired) and whether
// Wake-on-LAN is switched on in the settings.
type WakeState struct {
	// Paired: a second PC is paired (before that there is nothing to wake).
	Paired  bool
	MAC     string
	Enabled bool
}

// Wake is the second PC's Wake-on-LAN state as known now.
func (f *Flow) Wake() WakeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remote == nil {
		return WakeState{}
	}
	return WakeState{Paired: f.remote.Host != "", MAC: f.remote.MAC, Enabled: f.remote.Wake != nil && f.remote.Wake.Enabled}
}

// ---- Review ----

// PlanReview computes the exact config change and the service settings.
func (f *Flow) PlanReview(ctx context.Context) (*Review, error) {
	ctx, end, err := f.begin(ctx, "compute the change", PageReview)
	if err != nil {
		return nil, err
	}
	defer end()
	f.mu.Lock()
	choice, cfg := f.choiceLocked(), f.configPath
	f.mu.Unlock()
	st, serr := f.d.Service.Status(ctx)
	p, err := f.d.Config.Plan(ctx, cfg, choice)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rv := &Review{ConfigPath: cfg, Diff: p.Diff(), Choice: choice, Summary: f.summaryLocked(), TrayAtLogin: f.tray}
	if n, ok := p.(interface{ Notes() []string }); ok {
		rv.Notes = n.Notes()
	}
	rv.Service = f.serviceLinesLocked(st, serr)
	f.plan, f.review = p, rv
	return rv, nil
}

// choiceLocked is the choice with the remote host filled in.
func (f *Flow) choiceLocked() VisionChoice {
	c := f.choice
	if c.Placement == settings.PlacementRemote && f.remote != nil {
		h := endpointString(*f.remote)
		if f.remote.User != "" {
			h = f.remote.User + "@" + h
		}
		c.Host = h
	}
	return c
}

func (f *Flow) summaryLocked() string {
	o, _ := f.rec.Option(f.choice.Placement)
	p := f.choice.Placement
	if !p.ReadsPictures() {
		return settings.UpperFirst(settings.PlacementOff.Pictures(""))
	}
	s := settings.UpperFirst(p.Pictures(""))
	if p.Info().UsesVRAM && f.choice.Device != nil {
		s += fmt.Sprintf(" %d", *f.choice.Device)
	}
	if p.SecondPC() {
		s += " " + f.target.String()
		if f.report != nil {
			s += " (" + f.report.GPUName() + ")"
		}
		if f.report != nil && f.report.PictureSeconds > 0 {
			o.PictureSeconds = f.report.PictureSeconds
		}
	}
	// A trial of this run on the chosen place says more than an estimate
	// (a spare GPU picked by its index has none: the GPU trial reads on
	// the GPU Strata would use).
	if t := f.trials[f.choice.Placement]; t != nil && f.choice.Device == nil {
		s += fmt.Sprintf(", %s per picture as measured here", settings.Secs(t.PictureS))
	} else if o.PictureSeconds > 0 {
		s += fmt.Sprintf(", about %s per picture", FormatSeconds(o.PictureSeconds))
	}
	if p.SecondPC() {
		s += f.pcOpts.describe()
	}
	return s
}

func (f *Flow) serviceLinesLocked(st ServiceStatus, err error) []string {
	var l []string
	switch {
	case err != nil || st.Unknown:
		l = append(l, "Service: strata-service will be installed, or updated if it is already installed")
	case !st.Installed:
		l = append(l, "Service: strata-service will be installed and started; it starts Strata at boot")
	case st.Running:
		l = append(l, "Service: strata-service is installed and running; it will be updated and Strata restarted")
	default:
		l = append(l, "Service: strata-service is installed; it will be updated and started")
	}
	if st.Describe != "" {
		l = append(l, "Now: "+st.Describe)
	}
	l = append(l,
		"Runs Strata at normal priority with memory locking allowed (slower priorities load experts ~24x slower)",
		"Strata install: "+f.install.Root,
		"Config: "+f.configPath)
	return l
}

// SetTrayAtLogin is the Review page's check box.
func (f *Flow) SetTrayAtLogin(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tray = on
	if f.review != nil {
		f.review.TrayAtLogin = on
	}
}

// ---- Apply ----

// Apply installs or updates the service, writes the config and the
// companion settings, starts Strata and follows its start until it is
// ready. On any failure (or a Cancel) it puts the config and the settings
// back, removes a service it installed, restarts the old server if it ran,
// and returns an *ApplyError that says what it put back.
func (f *Flow) Apply(ctx context.Context, progress func(Progress)) error {
	ctx, end, err := f.begin(ctx, "apply", PageApply)
	if err != nil {
		return err
	}
	defer end()
	progress = orNop(progress)
	f.mu.Lock()
	plan, rv, in, cfg, tray := f.plan, f.review, f.install, f.configPath, f.tray
	choice := f.choiceLocked()
	next := f.newSettingsLocked()
	f.mu.Unlock()
	if plan == nil || rv == nil {
		return errors.New("go back to Review first: the change has not been computed")
	}
	err = f.apply(ctx, progress, plan, rv, *in, cfg, choice, next)
	f.mu.Lock()
	f.applyErr = err
	if err == nil {
		f.applied = true
		if f.d.Login != nil && tray != f.trayWas {
			if lerr := f.d.Login.SetEnabled(tray); lerr != nil {
				f.doneLines = append(f.doneLines, "Could not change \"start tray at login\": "+lerr.Error())
			} else {
				f.trayWas = tray
			}
		}
		f.pairedHere = false // kept: it is part of the applied setup now
	}
	f.mu.Unlock()
	return err
}

func (f *Flow) newSettingsLocked() *settings.Settings {
	n := &settings.Settings{}
	if f.prev != nil {
		c := *f.prev
		n = &c
	}
	n.StrataRoot = f.install.Root
	n.ConfigPath = f.configPath
	n.Vision = f.choice.Placement
	if f.remote != nil && (f.choice.Placement == settings.PlacementRemote || f.prepared) {
		r := *f.remote
		r.IdleStopS = f.pcOpts.IdleStopS
		if old := n.Remote; old != nil && r.Extra == nil && old.Host == r.Host && old.Port == r.Port {
			r.Extra = old.Extra // a newer version's keys about this PC stay
		}
		n.Remote = &r
	}
	if f.choice.Placement == settings.PlacementRemote {
		fb := f.pcOpts.FallbackCPU
		n.FallbackCPU = &fb
	}
	f.keepTrialsLocked(n)
	return n
}

func (f *Flow) apply(ctx context.Context, progress func(Progress), plan Plan, rv *Review, in Install, cfg string, choice VisionChoice, next *settings.Settings) error {
	step := func(frac float64, text string) { progress(Progress{Step: "apply", Fraction: frac, Text: text}) }

	step(0, "Checking the service")
	st, err := f.d.Service.Status(ctx)
	if err != nil {
		return &ApplyError{Step: "check the service", Err: err}
	}

	// The file may have changed since the user read the diff: never write a
	// change the user did not see.
	step(0.05, "Checking the config has not changed since Review")
	fresh, err := f.d.Config.Plan(ctx, cfg, choice)
	if err != nil {
		return &ApplyError{Step: "read the config", Err: err}
	}
	if fresh.Diff() != rv.Diff {
		return &ApplyError{Step: "write the config", Err: fmt.Errorf("%s changed since you reviewed it; go Back to Review to see the new change", cfg)}
	}

	var undo []func(context.Context) (string, error)
	rollback := func(ae *ApplyError) error {
		// Put back even though ctx may be cancelled: that is the point.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		step(1, "Putting things back as they were")
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			what, err := undo[i](rctx)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if what != "" {
				ae.RolledBack = append(ae.RolledBack, what)
			}
		}
		ae.RollbackErr = errors.Join(errs...)
		return ae
	}
	fail := func(stepName string, err error) error {
		if ctx.Err() != nil && !errors.Is(err, ErrCancelled) {
			err = fmt.Errorf("%w (%v)", ErrCancelled, err)
		}
		return rollback(&ApplyError{Step: stepName, Err: err})
	}

	if st.Installed {
		step(0.1, "Updating the Strata Companion service")
	} else {
		step(0.1, "Installing the Strata Companion service")
	}
	if err := f.d.Service.Install(ctx, in.Root, cfg); err != nil {
		return fail("install the service", err)
	}
	if !st.Installed {
		undo = append(undo, func(c context.Context) (string, error) {
			if err := f.d.Service.Uninstall(c); err != nil {
				return "", fmt.Errorf("removing the service installed a moment ago: %w", err)
			}
			return "the service installed a moment ago was removed", nil
		})
	}
	// A service that ran another config took this one: a rollback gives
	// it back (live.Service; the flow's stand-ins take none).
	if tk, ok := f.d.Service.(configTaker); ok {
		if root, old := tk.TookFrom(); old != "" {
			undo = append(undo, func(c context.Context) (string, error) {
				if err := tk.Take(c, root, old); err != nil {
					return "", fmt.Errorf("having the service run %s again: %w", old, err)
				}
				return "the service runs " + old + " again", nil
			})
		}
	}
	if ctx.Err() != nil {
		return fail("install the service", ctx.Err())
	}

	if plan.Diff() != "" {
		step(0.25, "Writing "+cfg)
		backup, err := plan.Apply()
		if err != nil {
			return fail("write the config", err)
		}
		undo = append(undo, func(context.Context) (string, error) {
			if backup == "" {
				return "", fmt.Errorf("no backup of %s to put back", cfg)
			}
			if err := f.d.Config.Restore(cfg, backup); err != nil {
				return "", fmt.Errorf("restoring %s from %s: %w", cfg, backup, err)
			}
			return fmt.Sprintf("the Strata config %s (from %s)", cfg, backup), nil
		})
	}
	if ctx.Err() != nil {
		return fail("write the config", ctx.Err())
	}

	step(0.3, "Saving the companion's settings")
	prev := f.prev
	if err := f.d.Settings.Save(next); err != nil {
		return fail("save the companion settings", err)
	}
	undo = append(undo, func(context.Context) (string, error) {
		if prev == nil || prev.Empty() {
			if err := f.d.Settings.Remove(); err != nil {
				return "", fmt.Errorf("removing the new companion settings: %w", err)
			}
			return "the companion settings (removed again)", nil
		}
		if err := f.d.Settings.Save(prev); err != nil {
			return "", fmt.Errorf("restoring the companion settings: %w", err)
		}
		return "the companion settings", nil
	})
	if ctx.Err() != nil {
		return fail("save the companion settings", ctx.Err())
	}

	if st.Running {
		step(0.35, "Restarting Strata with the new config")
		// The old server ran before: bring it back with the old config.
		undo = append([]func(context.Context) (string, error){func(c context.Context) (string, error) {
			if err := f.d.Service.Start(c, true); err != nil {
				return "", fmt.Errorf("restarting Strata with the old config: %w", err)
			}
			return "Strata restarted with the old config", nil
		}}, undo...)
	} else {
		step(0.35, "Starting Strata")
	}
	if err := f.d.Service.Start(ctx, st.Running); err != nil {
		return fail("start Strata", err)
	}
	step(0.4, "Waiting for Strata to be ready (the first start takes 1-3 minutes)")
	err = f.d.Service.Follow(ctx, st.Seq, func(p Progress) {
		if p.Step == "" {
			p.Step = "apply"
		}
		if p.Fraction >= 0 {
			p.Fraction = 0.4 + 0.6*p.Fraction
		}
		progress(p)
	})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return fail("start Strata", err)
	}
	step(1, "Strata is ready")
	f.mu.Lock()
	f.doneLines = append(f.doneLines, rv.Summary+".")
	if plan.Diff() == "" {
		f.doneLines = append(f.doneLines, "The Strata config already said this: it was left as it was.")
	} else {
		f.doneLines = append(f.doneLines, "The Strata config "+cfg+" was updated (a backup was kept).")
	}
	f.mu.Unlock()
	return nil
}

// configTaker is a Service that can say which config it ran before Install
// had it take the setup's, and take that one again.
type configTaker interface {
	TookFrom() (root, cfg string)
	Take(ctx context.Context, root, cfg string) error
}

// Applied reports whether Apply succeeded; DoneLines say what was done.
func (f *Flow) Applied() (bool, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied, append([]string(nil), f.doneLines...)
}

// ---- Navigation ----

// CanNext reports whether Next would move on, and if not, why.
func (f *Flow) CanNext() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.nextLocked()
	return err
}

func (f *Flow) nextLocked() (Page, error) {
	if f.cancelled {
		return f.page, ErrCancelled
	}
	if f.op != "" {
		return f.page, ErrBusy
	}
	switch f.page {
	case PageWelcome:
		return PageFindStrata, nil
	case PageFindStrata:
		if f.install == nil {
			return f.page, errors.New("choose a Strata install (or Browse to its folder) first")
		}
		if !f.install.Usable() {
			return f.page, fmt.Errorf("this Strata install cannot run yet: %s", strings.Join(f.install.Problems, "; "))
		}
		if f.configPath == "" {
			return f.page, errors.New("choose which of the install's configs (strata-<tag>.json) Strata uses")
		}
		return PageThisPC, nil
	case PageThisPC:
		if f.machine == nil {
			return f.page, errors.New("wait for the probe of this PC to finish")
		}
		return PagePlacement, nil
	case PagePlacement:
		if !f.choice.Placement.Valid() {
			return f.page, errors.New("choose where pictures should be read")
		}
		if f.choice.Placement == settings.PlacementRemote {
			return PageSecondPC, nil
		}
		return PageReview, nil
	case PageSecondPC:
		switch {
		case f.remote == nil:
			return f.page, errors.New("probe and pair the second PC first")
		case !f.prepared:
			return f.page, errors.New("prepare the second PC first (it copies the encoder's files there)")
		}
		return PageReview, nil
	case PageReview:
		if f.review == nil {
			return f.page, errors.New("wait for the change to be computed")
		}
		return PageApply, nil
	case PageApply:
		if !f.applied {
			return f.page, errors.New("the setup has not been applied yet")
		}
		return PageDone, nil
	}
	return f.page, errors.New("this is the last page")
}

// Next moves to the next page when the current one is complete.
func (f *Flow) Next() (Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.nextLocked()
	if err != nil {
		return f.page, err
	}
	f.history = append(f.history, f.page)
	f.page = p
	return p, nil
}

// CanBack reports whether Back is possible now.
func (f *Flow) CanBack() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canBackLocked()
}

func (f *Flow) canBackLocked() bool {
	if f.cancelled || len(f.history) == 0 || f.page == PageDone {
		return false
	}
	if f.page == PageApply && (f.op != "" || f.applied) {
		return false // Cancel stops Apply (and puts things back); Back would hide it
	}
	return true
}

// Back returns to the previous page, stopping a running probe first.
func (f *Flow) Back() (Page, error) {
	f.mu.Lock()
	if !f.canBackLocked() {
		p := f.page
		f.mu.Unlock()
		return p, errors.New("there is no going back from here")
	}
	done := f.stopOpLocked()
	f.page = f.history[len(f.history)-1]
	f.history = f.history[:len(f.history)-1]
	if f.page <= PageReview {
		f.plan, f.review = nil, nil
		f.applyErr = nil
	}
	p := f.page
	f.mu.Unlock()
	_ = done // the stopped operation drops its result (its ctx is cancelled)
	return p, nil
}

// Cancel stops everything. Before Apply it changes nothing (a pairing made
// in this run is undone); during Apply it waits for the rollback. It may
// block for that long: call it off the UI thread.
func (f *Flow) Cancel() CancelResult {
	f.mu.Lock()
	if f.cancelled {
		f.mu.Unlock()
		return CancelResult{}
	}
	if f.page == PageDone || f.applied {
		f.cancelled = true
		f.mu.Unlock()
		return CancelResult{Changed: true, Messages: []string{"The setup was already applied; closing changes nothing."}}
	}
	f.cancelled = true
	applying := f.op == "apply"
	done := f.stopOpLocked()
	f.mu.Unlock()
	if done != nil {
		<-done
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var res CancelResult
	if applying {
		var ae *ApplyError
		if errors.As(f.applyErr, &ae) {
			res.Messages = append(res.Messages, "Setup was stopped while applying.")
			if len(ae.RolledBack) > 0 {
				res.Messages = append(res.Messages, "Put back as it was: "+strings.Join(ae.RolledBack, "; ")+".")
			}
			if ae.RollbackErr != nil {
				res.Changed = true
				res.Messages = append(res.Messages, "Putting things back failed: "+ae.RollbackErr.Error())
			}
		}
	}
	if f.pairedHere && f.remote != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := f.d.Remote.Unpair(ctx, f.remote)
		cancel()
		if err != nil {
			res.Changed = true
			res.Messages = append(res.Messages, "The companion's key could not be removed from the second PC: "+err.Error()+". Run \"strata-service remote unpair\" to remove it.")
		} else {
			res.Messages = append(res.Messages, "The key this setup put on the second PC was removed again.")
		}
		f.pairedHere = false
	}
	if !res.Changed {
		res.Messages = append(res.Messages, "Nothing on this PC was changed.")
	}
	return res
}

// FormatSeconds writes a picture time for people: "1.6 s", "15 s", "0.8 s".
// The probe's reasons round the same way (probe.Seconds): one figure, one
// way of writing it, in the reason and in the option under it.
func FormatSeconds(s float64) string {
	if s >= 9.95 { // 9.96 is "10 s", not "10.0 s"
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

func orNop(p func(Progress)) func(Progress) {
	if p == nil {
		return func(Progress) {}
	}
	return p
}
