package setupflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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

// CancelResult says what Cancel did.
type CancelResult struct {
	// Changed is false when the machine is exactly as before the wizard.
	Changed  bool
	Messages []string
}

// Flow is the wizard: its pages, the one long operation that may run, and
// the steps that hold everything else. A page drives its step directly
// (flow.Find.Search, flow.SecondPC.Pair, flow.Apply.Run); the Flow moves
// between pages by what the steps say is complete.
//
// Everything is safe to call from several goroutines: a long operation runs
// without a lock, so Back and Cancel can stop it. Locks are taken in one
// order: the Flow's, then a step's; a step holds its own lock only over its
// own fields and calls out (the world, another step) without it.
type Flow struct {
	// Find is the Strata install and config (the Strata page).
	Find *FindStep
	// Choice is this PC's probe, the recommendation and where pictures are
	// read (the This PC and Pictures pages).
	Choice *ChoiceStep
	// SecondPC is the second PC: reaching it, pairing, preparing, and its
	// options (the Second PC page).
	SecondPC *SecondPCStep
	// Measure reads trial pictures (the Pictures and Second PC pages).
	Measure *MeasureStep
	// Apply is the exact change and its application (the Review, Apply and
	// Done pages).
	Apply *ApplyStep
	// Code is pairing by code with a PC that lends its GPU (the Second PC
	// page; lend.go).
	Code *CodeStep
	// Lend is this PC lending its GPU: the role "Lend this PC's GPU to
	// another PC" (lending.go).
	Lend *LendStep

	mu         sync.Mutex
	page       Page
	history    []Page
	notice     string
	cancelled  bool
	configured bool // the machine was set up before the wizard opened
	op         operation
}

// operation is the running long operation ("" name when none).
type operation struct {
	name   string
	gen    uint64
	cancel context.CancelFunc
	done   chan struct{}
}

// gate is what a step asks of the Flow before a long operation: that no
// other runs, that the wizard shows one of pages, and a ctx that Back and
// Cancel end. end must be called when the operation returns.
type gate interface {
	begin(ctx context.Context, name string, pages ...Page) (_ context.Context, end func(), _ error)
}

// New reads the current settings and decides the first page: the Welcome
// page on a new machine, the Placement page ("change where vision runs") on
// one already set up, or opts.StartPage.
func New(ctx context.Context, d Deps, opts Options) (*Flow, error) {
	prev, err := d.Settings.Load()
	if err != nil {
		return nil, err
	}
	f := &Flow{page: PageWelcome}
	f.compose(d, prev)
	f.configured = f.resume(ctx, d, prev)
	f.startAt(opts.StartPage)
	return f, nil
}

// compose builds the steps, each with what it reads of the others.
func (f *Flow) compose(d Deps, prev *settings.Settings) {
	f.Apply = newApplyStep(f, d, prev)
	changed := f.Apply.forget // a changed choice needs a new Review
	f.Find = newFindStep(f, d.Finder, changed)
	f.Choice = newChoiceStep(f, d.Prober, changed)
	f.SecondPC = newSecondPCStep(f, d.Remote, d.Confirm, f.Find, f.Choice, changed, prev)
	f.Measure = newMeasureStep(f, d.Measurer, f.Find, f.SecondPC, f.Choice, prev)
	f.Code = newCodeStep(f, d.Lenders, f.Find, f.SecondPC)
	f.Lend = newLendStep(d.Lending)
	f.Choice.trials = f.Measure.shown
	f.Apply.facts = f.facts
	f.Apply.onApplied = f.SecondPC.keepPairing
}

// resume starts from the settings of a machine set up before, when their
// install still runs; it reports whether it did.
func (f *Flow) resume(ctx context.Context, d Deps, prev *settings.Settings) bool {
	if prev.StrataRoot == "" || prev.ConfigPath == "" {
		return false
	}
	in, err := d.Finder.Inspect(ctx, prev.StrataRoot)
	if err != nil || !in.Usable() {
		return false
	}
	f.Find.resume(in, prev.ConfigPath)
	p := prev.Vision
	if !p.Valid() {
		if cur, err := d.Config.Current(prev.ConfigPath); err == nil {
			p = cur
		}
	}
	f.Choice.resume(p)
	f.SecondPC.resume(prev.Remote)
	return true
}

// startAt opens the wizard on start, or the nearest page it can show, with
// the pages before it as Back's history.
func (f *Flow) startAt(start Page) {
	if start == PageWelcome && f.configured {
		start = PagePlacement
	}
	if start > PageSecondPC {
		start = PagePlacement // Review and later need this run's choices
	}
	if _, _, ok := f.Find.Selected(); start > PageFindStrata && !ok {
		f.notice = "Strata Companion is not set up yet: first tell it which Strata install to use."
		start = PageFindStrata
	}
	if start == PageSecondPC {
		f.Choice.resume(settings.PlacementRemote)
	}
	for p := PageWelcome; p < start; p++ {
		f.history = append(f.history, p)
	}
	f.page = start
}

// facts are what the steps before Review settled, as Review shows them and
// Apply writes them.
func (f *Flow) facts() setupFacts {
	in, cfg, _ := f.Find.Selected()
	c := f.Choice.Current()
	trials := f.Measure.kept()
	sum := summarize(c, f.Choice.option(c.Placement), f.SecondPC.summary(), f.Measure.shown()[c.Placement])
	if h := f.SecondPC.host(); c.Placement == settings.PlacementRemote && h != "" {
		c.Host = h
	}
	remote, fallbackCPU := f.SecondPC.forSettings(c.Placement)
	return setupFacts{install: in, configPath: cfg, choice: c, summary: sum, remote: remote, fallbackCPU: fallbackCPU, trials: trials}
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
	return f.op.name
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
	if f.op.name != "" {
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
	f.op.gen++
	gen := f.op.gen
	done := make(chan struct{})
	f.op = operation{name: name, gen: gen, cancel: cancel, done: done}
	return ctx, func() {
		cancel()
		f.mu.Lock()
		if f.op.gen == gen {
			f.op = operation{gen: gen}
		}
		f.mu.Unlock()
		close(done)
	}, nil
}

// stopOpLocked cancels the running operation and returns its done channel
// (nil when none). The caller holds f.mu.
func (f *Flow) stopOpLocked() chan struct{} {
	if f.op.name == "" {
		return nil
	}
	f.op.cancel()
	done := f.op.done
	f.op = operation{gen: f.op.gen + 1}
	return done
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
	if f.op.name != "" {
		return f.page, ErrBusy
	}
	p, err := f.pageAfter(f.page)
	if err != nil {
		return f.page, err
	}
	return p, nil
}

// pageAfter is the page after p, or what p's step still lacks.
func (f *Flow) pageAfter(p Page) (Page, error) {
	switch p {
	case PageWelcome:
		return PageFindStrata, nil
	case PageFindStrata:
		return PageThisPC, f.Find.complete()
	case PageThisPC:
		return PagePlacement, f.Choice.probed()
	case PagePlacement:
		if err := f.Choice.chosen(); err != nil {
			return p, err
		}
		if f.Choice.Current().Placement == settings.PlacementRemote {
			return PageSecondPC, nil
		}
		return PageReview, nil
	case PageSecondPC:
		return PageReview, f.SecondPC.complete()
	case PageReview:
		return PageApply, f.Apply.reviewed()
	case PageApply:
		return PageDone, f.Apply.done()
	}
	return p, errors.New("this is the last page")
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
	if f.page == PageApply && (f.op.name != "" || f.Apply.isApplied()) {
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
		f.Apply.reopen()
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
	if f.page == PageDone || f.Apply.isApplied() {
		f.cancelled = true
		f.mu.Unlock()
		return CancelResult{Changed: true, Messages: []string{"The setup was already applied; closing changes nothing."}}
	}
	f.cancelled = true
	applying := f.op.name == "apply"
	done := f.stopOpLocked()
	f.mu.Unlock()
	if done != nil {
		<-done
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var res CancelResult
	if applying {
		res.add(stoppedApplying(f.Apply.result()))
	}
	res.add(f.SecondPC.undoPairing())
	if !res.Changed {
		res.Messages = append(res.Messages, "Nothing on this PC was changed.")
	}
	return res
}

// add takes in what one step said it undid or could not undo.
func (r *CancelResult) add(o CancelResult) {
	r.Changed = r.Changed || o.Changed
	r.Messages = append(r.Messages, o.Messages...)
}

// stoppedApplying says what an Apply stopped by Cancel put back.
func stoppedApplying(err error) CancelResult {
	var res CancelResult
	var ae *ApplyError
	if !errors.As(err, &ae) {
		return res
	}
	res.Messages = append(res.Messages, "Setup was stopped while applying.")
	if len(ae.RolledBack) > 0 {
		res.Messages = append(res.Messages, "Put back as it was: "+strings.Join(ae.RolledBack, "; ")+".")
	}
	if ae.RollbackErr != nil {
		res.Changed = true
		res.Messages = append(res.Messages, "Putting things back failed: "+ae.RollbackErr.Error())
	}
	return res
}

// FormatSeconds writes an estimated picture time for people: "1.6 s",
// "15 s", "0.8 s" (settings.RoughSecs, as the probe's reasons write it).
func FormatSeconds(s float64) string { return settings.RoughSecs(s) }

func orNop(p func(Progress)) func(Progress) {
	if p == nil {
		return func(Progress) {}
	}
	return p
}
