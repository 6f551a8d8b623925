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

// setupFacts are what the steps before Review settled: what Review shows
// and Apply writes. The flow gathers them (Flow.facts).
type setupFacts struct {
	install    Install
	configPath string
	// choice has its Host filled when pictures go to a paired second PC.
	choice  VisionChoice
	summary string
	// remote is the second PC the settings keep (nil: none), with its idle
	// stop; fallbackCPU is its CPU fallback.
	remote      *settings.Remote
	fallbackCPU bool
	// trials are this run's trial pictures.
	trials map[settings.Placement]*Trial
}

// ApplyStep is the Review, Apply and Done pages: the exact change to the
// Strata config and the service (PlanReview), then its application with a
// rollback of everything on a failure (Run). It reads what the earlier
// steps settled through facts, and writes the settings prev becomes.
type ApplyStep struct {
	service Service
	config  ConfigPlanner
	store   SettingsStore
	login   LoginItem
	gate    gate
	prev    *settings.Settings // the settings read at start
	// facts are the earlier steps' results, read at Review and at Apply.
	facts func() setupFacts
	// onApplied runs once Apply succeeded (a pairing made in this run is
	// part of the setup now).
	onApplied func()

	mu        sync.Mutex
	plan      Plan
	review    *Review
	tray      bool
	trayWas   bool
	applied   bool
	err       error // the last Apply's
	doneLines []string
}

func newApplyStep(g gate, d Deps, prev *settings.Settings) *ApplyStep {
	a := &ApplyStep{service: d.Service, config: d.Config, store: d.Settings, login: d.Login, gate: g, prev: prev, onApplied: func() {}}
	if d.Login != nil {
		a.trayWas = d.Login.Enabled()
		a.tray = a.trayWas
	}
	return a
}

// PlanReview computes the exact config change and the service settings.
func (a *ApplyStep) PlanReview(ctx context.Context) (*Review, error) {
	ctx, end, err := a.gate.begin(ctx, "compute the change", PageReview)
	if err != nil {
		return nil, err
	}
	defer end()
	fx := a.facts()
	st, serr := a.service.Status(ctx)
	p, err := a.config.Plan(ctx, fx.configPath, fx.choice)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rv := &Review{ConfigPath: fx.configPath, Diff: p.Diff(), Choice: fx.choice, Summary: fx.summary, TrayAtLogin: a.tray}
	if n, ok := p.(interface{ Notes() []string }); ok {
		rv.Notes = n.Notes()
	}
	rv.Service = serviceLines(st, serr, fx.install.Root, fx.configPath)
	a.plan, a.review = p, rv
	return rv, nil
}

// summarize is the Review's one sentence about where pictures are read:
// the place, the second PC (pc) when it is that, the time per picture
// (measured when trial is one: this run's or the one kept, else
// estimated), and the second PC's options.
func summarize(c VisionChoice, o Option, pc secondPCWords, trial *Trial) string {
	p := c.Placement
	if !p.ReadsPictures() {
		return settings.UpperFirst(settings.PlacementOff.Pictures(""))
	}
	s := settings.UpperFirst(p.Pictures(""))
	if p.Info().UsesVRAM && c.Device != nil {
		s += fmt.Sprintf(" %d", *c.Device)
	}
	if p.SecondPC() {
		s += " " + pc.name
		if pc.pictureSeconds > 0 {
			o.PictureSeconds = pc.pictureSeconds
		}
	}
	// A trial on the chosen place replaces the estimate (a spare GPU
	// picked by its index has none: the GPU trial reads on the GPU Strata
	// would use).
	var m *settings.Measurement
	if trial != nil && c.Device == nil {
		m = &trial.Measurement
	}
	if w := settings.ShownPicture(o.PictureSeconds, m).Words(); w != "" {
		s += ", " + w
	}
	if p.SecondPC() {
		s += pc.options
	}
	return s
}

// serviceLines are the Review's lines about the service, as found (st, or
// err when it could not be read), and the install and config it will run.
func serviceLines(st ServiceStatus, err error, root, configPath string) []string {
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
		"Strata install: "+root,
		"Config: "+configPath)
	return l
}

// SetTrayAtLogin is the Review page's check box.
func (a *ApplyStep) SetTrayAtLogin(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tray = on
	if a.review != nil {
		a.review.TrayAtLogin = on
	}
}

// Run installs or updates the service, writes the config and the
// companion settings, starts Strata and follows its start until it is
// ready. On any failure (or a Cancel) it puts the config and the settings
// back, removes a service it installed, restarts the old server if it ran,
// and returns an *ApplyError that says what it put back.
func (a *ApplyStep) Run(ctx context.Context, progress func(Progress)) error {
	ctx, end, err := a.gate.begin(ctx, "apply", PageApply)
	if err != nil {
		return err
	}
	defer end()
	progress = orNop(progress)
	fx := a.facts()
	a.mu.Lock()
	plan, rv, tray := a.plan, a.review, a.tray
	a.mu.Unlock()
	if plan == nil || rv == nil {
		return errors.New("go back to Review first: the change has not been computed")
	}
	err = a.apply(ctx, progress, plan, rv, fx)
	a.finish(err, tray)
	return err
}

// finish records how Apply ended and, when it succeeded, sets "start the
// tray at login" as ticked.
func (a *ApplyStep) finish(err error, tray bool) {
	a.mu.Lock()
	a.err = err
	if err == nil {
		a.applied = true
		if a.login != nil && tray != a.trayWas {
			if lerr := a.login.SetEnabled(tray); lerr != nil {
				a.doneLines = append(a.doneLines, "Could not change \"start tray at login\": "+lerr.Error())
			} else {
				a.trayWas = tray
			}
		}
	}
	a.mu.Unlock()
	if err == nil {
		a.onApplied()
	}
}

// newSettings are the companion settings Apply writes: prev with what the
// steps settled.
func newSettings(prev *settings.Settings, fx setupFacts) *settings.Settings {
	n := &settings.Settings{}
	if prev != nil {
		c := *prev
		n = &c
	}
	n.StrataRoot = fx.install.Root
	n.ConfigPath = fx.configPath
	n.Vision = fx.choice.Placement
	if fx.remote != nil {
		r := *fx.remote
		if old := n.Remote; old != nil && r.Extra == nil && old.Host == r.Host && old.Port == r.Port {
			r.Extra = old.Extra // a newer version's keys about this PC stay
		}
		n.Remote = &r
	}
	if fx.choice.Placement == settings.PlacementRemote {
		fb := fx.fallbackCPU
		n.FallbackCPU = &fb
	}
	keepTrials(n, fx.trials)
	return n
}

// keepTrials puts this run's trials into n (the settings Apply writes).
func keepTrials(n *settings.Settings, trials map[settings.Placement]*Trial) {
	if len(trials) == 0 {
		return
	}
	if n.Measured != nil { // n is a shallow copy of the settings read before
		m := *n.Measured
		n.Measured = &m
	}
	for p, t := range trials {
		n.SetMeasured(p, t.Measurement)
	}
}

// apply checks that nothing changed since Review, then makes the change
// step by step; a failed or cancelled step puts back every earlier one.
func (a *ApplyStep) apply(ctx context.Context, progress func(Progress), plan Plan, rv *Review, fx setupFacts) error {
	tx := &applyTx{ctx: ctx, step: func(frac float64, text string) { progress(Progress{Step: "apply", Fraction: frac, Text: text}) }}
	st, err := a.check(tx, rv, fx)
	if err != nil {
		return err
	}
	if err := a.installService(tx, st, fx); err != nil {
		return err
	}
	if err := a.writeConfig(tx, plan, fx.configPath); err != nil {
		return err
	}
	if err := a.saveSettings(tx, newSettings(a.prev, fx)); err != nil {
		return err
	}
	if err := a.startStrata(tx, st, progress); err != nil {
		return err
	}
	tx.step(1, "Strata is ready")
	a.mu.Lock()
	a.doneLines = append(a.doneLines, rv.Summary+".")
	if plan.Diff() == "" {
		a.doneLines = append(a.doneLines, "The Strata config already said this: it was left as it was.")
	} else {
		a.doneLines = append(a.doneLines, "The Strata config "+fx.configPath+" was updated (a backup was kept).")
	}
	a.mu.Unlock()
	return nil
}

// check reads the service as it is and makes sure the config says what
// the user reviewed: the file may have changed since the user read the
// diff, and a change the user did not see is never written.
func (a *ApplyStep) check(tx *applyTx, rv *Review, fx setupFacts) (ServiceStatus, error) {
	tx.step(0, "Checking the service")
	st, err := a.service.Status(tx.ctx)
	if err != nil {
		return st, &ApplyError{Step: "check the service", Err: err}
	}
	tx.step(0.05, "Checking the config has not changed since Review")
	fresh, err := a.config.Plan(tx.ctx, fx.configPath, fx.choice)
	if err != nil {
		return st, &ApplyError{Step: "read the config", Err: err}
	}
	if fresh.Diff() != rv.Diff {
		return st, &ApplyError{Step: "write the config", Err: fmt.Errorf("%s changed since you reviewed it; go Back to Review to see the new change", fx.configPath)}
	}
	return st, nil
}

// installService installs or updates the service; a rollback removes one
// it installed and gives a service that ran another config that one back.
func (a *ApplyStep) installService(tx *applyTx, st ServiceStatus, fx setupFacts) error {
	if st.Installed {
		tx.step(0.1, "Updating the Strata Companion service")
	} else {
		tx.step(0.1, "Installing the Strata Companion service")
	}
	if err := a.service.Install(tx.ctx, fx.install.Root, fx.configPath); err != nil {
		return tx.fail("install the service", err)
	}
	if !st.Installed {
		tx.undo(func(c context.Context) (string, error) {
			if err := a.service.Uninstall(c); err != nil {
				return "", fmt.Errorf("removing the service installed a moment ago: %w", err)
			}
			return "the service installed a moment ago was removed", nil
		})
	}
	// A service that ran another config took this one: a rollback gives
	// it back (live.Service; the flow's stand-ins take none).
	if tk, ok := a.service.(configTaker); ok {
		if root, old := tk.TookFrom(); old != "" {
			tx.undo(func(c context.Context) (string, error) {
				if err := tk.Take(c, root, old); err != nil {
					return "", fmt.Errorf("having the service run %s again: %w", old, err)
				}
				return "the service runs " + old + " again", nil
			})
		}
	}
	return tx.stopped("install the service")
}

// writeConfig writes the reviewed change (none when the config already
// says it); a rollback restores the backup.
func (a *ApplyStep) writeConfig(tx *applyTx, plan Plan, cfg string) error {
	if plan.Diff() != "" {
		tx.step(0.25, "Writing "+cfg)
		backup, err := plan.Apply()
		if err != nil {
			return tx.fail("write the config", err)
		}
		tx.undo(func(context.Context) (string, error) {
			if backup == "" {
				return "", fmt.Errorf("no backup of %s to put back", cfg)
			}
			if err := a.config.Restore(cfg, backup); err != nil {
				return "", fmt.Errorf("restoring %s from %s: %w", cfg, backup, err)
			}
			return fmt.Sprintf("the Strata config %s (from %s)", cfg, backup), nil
		})
	}
	return tx.stopped("write the config")
}

// saveSettings writes the companion settings; a rollback puts the old ones
// back, or removes the file on a first setup.
func (a *ApplyStep) saveSettings(tx *applyTx, next *settings.Settings) error {
	tx.step(0.3, "Saving the companion's settings")
	prev := a.prev
	if err := a.store.Save(next); err != nil {
		return tx.fail("save the companion settings", err)
	}
	tx.undo(func(context.Context) (string, error) {
		if prev == nil || prev.Empty() {
			if err := a.store.Remove(); err != nil {
				return "", fmt.Errorf("removing the new companion settings: %w", err)
			}
			return "the companion settings (removed again)", nil
		}
		if err := a.store.Save(prev); err != nil {
			return "", fmt.Errorf("restoring the companion settings: %w", err)
		}
		return "the companion settings", nil
	})
	return tx.stopped("save the companion settings")
}

// startStrata starts Strata (restarts it when the service ran it) and
// follows its start until it is ready; a rollback brings back a server
// that ran before, with the old config, after everything else is put back.
func (a *ApplyStep) startStrata(tx *applyTx, st ServiceStatus, progress func(Progress)) error {
	if st.Running {
		tx.step(0.35, "Restarting Strata with the new config")
		tx.undoLast(func(c context.Context) (string, error) {
			if err := a.service.Start(c, true); err != nil {
				return "", fmt.Errorf("restarting Strata with the old config: %w", err)
			}
			return "Strata restarted with the old config", nil
		})
	} else {
		tx.step(0.35, "Starting Strata")
	}
	if err := a.service.Start(tx.ctx, st.Running); err != nil {
		return tx.fail("start Strata", err)
	}
	tx.step(0.4, "Waiting for Strata to be ready (the first start takes 1-3 minutes)")
	err := a.service.Follow(tx.ctx, st.Seq, func(p Progress) {
		if p.Step == "" {
			p.Step = "apply"
		}
		if p.Fraction >= 0 {
			p.Fraction = 0.4 + 0.6*p.Fraction
		}
		progress(p)
	})
	if err == nil && tx.ctx.Err() != nil {
		err = tx.ctx.Err()
	}
	if err != nil {
		return tx.fail("start Strata", err)
	}
	return nil
}

// applyTx is one Apply under way: its ctx, its progress line, and what
// puts back each step done so far.
type applyTx struct {
	ctx  context.Context
	step func(frac float64, text string)
	// undos run last to first; each says what it put back ("" for nothing).
	undos []func(context.Context) (string, error)
}

// undo adds what puts back the step just done.
func (t *applyTx) undo(f func(context.Context) (string, error)) { t.undos = append(t.undos, f) }

// undoLast adds f to run after every other undo.
func (t *applyTx) undoLast(f func(context.Context) (string, error)) {
	t.undos = append([]func(context.Context) (string, error){f}, t.undos...)
}

// stopped fails stepName when the Apply was cancelled during it.
func (t *applyTx) stopped(stepName string) error {
	if t.ctx.Err() != nil {
		return t.fail(stepName, t.ctx.Err())
	}
	return nil
}

// fail puts everything back and says that stepName failed with err (a
// cancelled Apply says it was cancelled).
func (t *applyTx) fail(stepName string, err error) error {
	if t.ctx.Err() != nil && !errors.Is(err, ErrCancelled) {
		err = fmt.Errorf("%w (%v)", ErrCancelled, err)
	}
	return t.rollback(&ApplyError{Step: stepName, Err: err})
}

func (t *applyTx) rollback(ae *ApplyError) error {
	// Put back even though ctx may be cancelled: that is the point.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 2*time.Minute)
	defer cancel()
	t.step(1, "Putting things back as they were")
	var errs []error
	for i := len(t.undos) - 1; i >= 0; i-- {
		what, err := t.undos[i](rctx)
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

// configTaker is a Service that can say which config it ran before Install
// had it take the setup's, and take that one again.
type configTaker interface {
	TookFrom() (root, cfg string)
	Take(ctx context.Context, root, cfg string) error
}

// Applied reports whether Apply succeeded; DoneLines say what was done.
func (a *ApplyStep) Applied() (bool, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied, append([]string(nil), a.doneLines...)
}

// forget drops the computed change: a choice changed since.
func (a *ApplyStep) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.plan, a.review = nil, nil
}

// reopen is Back to Review or before: the change is computed again and the
// last Apply's failure is over.
func (a *ApplyStep) reopen() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.plan, a.review = nil, nil
	a.err = nil
}

// reviewed says what the Review page still lacks (nil: nothing).
func (a *ApplyStep) reviewed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.review == nil {
		return errors.New("wait for the change to be computed")
	}
	return nil
}

// done says what the Apply page still lacks (nil: nothing).
func (a *ApplyStep) done() error {
	if !a.isApplied() {
		return errors.New("the setup has not been applied yet")
	}
	return nil
}

func (a *ApplyStep) isApplied() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied
}

// result is the last Apply's error (nil: none, or it succeeded).
func (a *ApplyStep) result() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}
