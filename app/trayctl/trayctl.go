// Package trayctl is the tray's controller, without any GUI toolkit: it takes
// the watcher's updates and the user's clicks, keeps the few things the tray
// itself knows (an action in progress, the last state for notifications),
// computes the menu with traymodel and hands it to a View, raises notices
// through a Notifier, and carries out clicks through the control API and the
// desktop. Everything runs on one goroutine (Run); other goroutines post work
// to it, so no state here needs a lock. app/ wires it to systray.
package trayctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/elevate"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

// View shows a menu (the systray adapter in app/, a recorder in tests).
type View interface {
	Show(m traymodel.Menu)
}

// Notifier raises a desktop notification.
type Notifier interface {
	Notify(ctx context.Context, n traymodel.Notice) error
}

// Desktop is what the tray asks of the desktop session.
type Desktop interface {
	// Confirm asks a yes/no question; asked is false when no dialog could be
	// shown (then the caller decides, and tells the user by a notice).
	Confirm(ctx context.Context, title, question string) (yes, asked bool)
	// Open opens a URL, a folder or a file with the user's default program.
	Open(target string) error
	// OpenSetup starts strata-setup, on page when not "".
	OpenSetup(page string) error
	// RunElevated runs strata-service with args with administrator rights
	// (Windows: the UAC prompt; Linux: pkexec) and waits for it. ErrDeclined:
	// the user said no to the prompt. Any other error's text says what
	// happened and what to do (where no prompt can ask: the command to run
	// by hand).
	RunElevated(ctx context.Context, args ...string) error
}

// ErrDeclined is RunElevated's answer when the user declined the
// administrator prompt: nothing was done, and there is nothing to tell.
var ErrDeclined = elevate.ErrDeclined

// Autostart is the "Start tray at login" switch.
type Autostart interface {
	Enabled() (bool, error)
	Set(on bool) error
}

// Controller is the tray's brain. Set the fields, then Run.
type Controller struct {
	View      View
	Notifier  Notifier
	Desktop   Desktop
	Autostart Autostart
	// Connect reaches the owner for actions (default: the service's
	// control API client, watch.Connect): the tray asks nothing else.
	Connect func() (controlapi.Owner, error)
	// Quit ends the tray (systray.Quit); the service keeps running.
	Quit func()
	Now  func() time.Time
	Logf func(format string, args ...any)
	// Refresh is how often the menu is redrawn while something in it moves
	// by the second (a server starting, an action pending; default 5 s). A
	// ready or idle menu shows times of day, redrawn at midnight at most.
	// The settings come in the service's state (controlapi.SettingsView),
	// re-read after every event; the autostart entry is re-read every
	// LocalEvery (default 10 min).
	Refresh    time.Duration
	LocalEvery time.Duration
	// NoGPUVision, when set, asks once (off Run's goroutine) whether this
	// PC's GPU can read pictures: "" when it can, else why not in a few
	// words (the probe's view: the GPU choice is greyed out then).
	NoGPUVision func(ctx context.Context) string
	// ReadLending reads this account's view of lending this PC's GPU
	// (lendshown.Read; os.ErrNotExist: it does not lend). nil: the tray
	// never shows lending. Read when the tray starts, with the autostart
	// entry, after each lending command, and every Refresh while a code is
	// valid (another PC may pair with it then).
	ReadLending func() (*lendshown.Shown, error)

	work chan func()
	stop chan struct{} // closed when Run returns

	// Owned by Run's goroutine.
	ctx        context.Context
	in         traymodel.Input
	rules      traymodel.Rules
	seen       bool // a state was shown once (the first one raises no notices)
	prev       *controlapi.State
	busy       bool // a click is being carried out (a dialog is open, a request runs)
	remoteAddr string
	lastLocal  time.Time // when loadLocal last ran
	// readingConfigs: a GET /v1/configs is under way; configsFor is the
	// config that ran when the list was last asked for.
	readingConfigs bool
	configsRead    bool
	configsFor     string
	lendErr        string // the last error reading the lending view (logged once)
}

// New returns a controller with its work queue; fill in the fields before Run.
func New() *Controller {
	return &Controller{work: make(chan func(), 64), stop: make(chan struct{})}
}

func (c *Controller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Controller) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// post runs f on the controller's goroutine.
func (c *Controller) post(f func()) {
	select {
	case c.work <- f:
	case <-c.stop:
	}
}

// Update hands the controller a watcher update (from any goroutine).
func (c *Controller) Update(u watch.Update) { c.post(func() { c.update(u) }) }

// Click hands the controller a click on item id (from any goroutine).
func (c *Controller) Click(id traymodel.ItemID) { c.post(func() { c.click(id) }) }

// Run processes updates and clicks until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.ctx = ctx
	var wg sync.WaitGroup
	defer wg.Wait() // after close(c.stop): a watcher blocked in post gives up
	defer close(c.stop)
	c.in.Reach = traymodel.Unreachable
	c.in.Problem = "  connecting to the Strata Companion service..."
	c.loadLocal()
	c.show()
	if c.NoGPUVision != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			why := c.NoGPUVision(ctx)
			if why != "" {
				c.logf("%s cannot read pictures: %s", settings.PlacementGPU.Name(""), why)
			}
			c.post(func() {
				c.in.NoGPUVision = why
				c.show()
			})
		}()
	}
	fast := c.Refresh
	if fast <= 0 {
		fast = 5 * time.Second
	}
	localEvery := c.LocalEvery
	if localEvery <= 0 {
		localEvery = 10 * time.Minute
	}
	// One timer, set after every piece of work to the next moment anything
	// on screen can change: an idle tray sleeps.
	timer := time.NewTimer(localEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.work:
			f()
		case <-timer.C:
			if time.Since(c.lastLocal) >= localEvery/2 {
				c.loadLocal()
			} else if c.in.Lending.CodeAt(c.now()) != "" {
				c.readLending()
			}
			c.resolvePending()
			c.show()
		}
		next := localEvery - time.Since(c.lastLocal)
		if c.in.Lending.CodeAt(c.now()) != "" && fast < next {
			next = fast // a PC may pair with the code: look at the view again
		}
		if d := traymodel.NextChange(c.in, c.now(), fast); d > 0 && d < next {
			next = d
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(next, 10*time.Millisecond))
	}
}

// loadLocal takes what the tray knows besides the server from the
// service's state (the paired second PC, the notification and fallback
// settings, the last measurements: controlapi.SettingsView) and re-reads
// the autostart switch.
func (c *Controller) loadLocal() {
	c.lastLocal = time.Now()
	c.takeSettings()
	c.readLending()
	if c.Autostart != nil {
		on, err := c.Autostart.Enabled()
		if err != nil {
			c.logf("reading the autostart setting: %v", err)
		}
		c.in.Autostart = on
	}
}

// takeSettings shows the settings as the last state carries them (none
// yet, or a service older than the tray: the defaults, as the service
// shows empty settings).
func (c *Controller) takeSettings() {
	v := controlapi.ViewOf(&settings.Settings{})
	if c.in.State != nil && c.in.State.Settings != nil {
		v = c.in.State.Settings
	}
	c.rules.Off = !v.Notifications
	c.in.FallbackCPU = v.FallbackCPU
	c.in.Measured = v.Measured
	c.in.RemoteName, c.remoteAddr = "", ""
	if r := v.SecondPC; r != nil {
		c.in.RemoteName, c.remoteAddr = r.Host, r.Host
		if r.User != "" {
			c.remoteAddr = r.User + "@" + c.remoteAddr
		}
		if r.Port != 0 && r.Port != 22 {
			c.remoteAddr = fmt.Sprintf("%s:%d", c.remoteAddr, r.Port)
		}
	}
}

// readLending takes this account's view of lending from its file.
func (c *Controller) readLending() {
	if c.ReadLending == nil {
		return
	}
	l, err := c.ReadLending()
	if err != nil {
		l = nil
		if !errors.Is(err, os.ErrNotExist) && err.Error() != c.lendErr {
			c.logf("reading this account's view of lending: %v", err)
		}
		c.lendErr = err.Error()
	} else {
		c.lendErr = ""
	}
	c.in.Lending = l
}

func (c *Controller) show() {
	c.in.Now = c.now()
	if c.View != nil {
		c.View.Show(traymodel.Build(c.in))
	}
}

func (c *Controller) update(u watch.Update) {
	now := c.now()
	if u.State == nil {
		c.in.State = nil
		c.in.Reach, c.in.Problem = describe(u.Err)
	} else {
		c.in.State = u.State
		c.takeSettings()
		c.in.Reach, c.in.Problem = traymodel.Connected, ""
		c.in.Relay.Seed(u.State)
		c.in.Relay.Fold(u.Events)
		c.followUpdate(u.Events)
		if !c.configsRead || c.configsFor != u.State.Config.Path || hasKind(u.Events, events.ConfigSwitched) {
			c.configsRead, c.configsFor = true, u.State.Config.Path
			c.readConfigs()
		}
		var notices []traymodel.Notice
		if c.seen {
			notices = c.rules.Observe(c.prev, u.State, u.Events, now)
		}
		c.seen = true
		c.prev = u.State
		// A switch with no restart said so already: no "ready again".
		noRestart := c.in.Pending != nil && c.in.Pending.NoRestart
		if c.resolvePending() && !noRestart && !c.rules.Off && !hasTopic(notices, traymodel.TopicServerReady) {
			// The user asked for this restart and watched the progress
			// line: say when it is over even if a "ready" notice was
			// rate-limited away.
			st := u.State
			notices = append(notices, traymodel.Notice{Topic: "tray.action", Title: "Strata is ready",
				Body: readyAgain(st.Vision.Placement, c.in.RemoteName)})
		}
		for _, n := range notices {
			c.notify(n)
		}
		c.show()
		return
	}
	c.resolvePending()
	c.show()
}

// followUpdate keeps the progress line on an update of Strata (its lines
// come as events) and says how it ended.
func (c *Controller) followUpdate(evs []events.Event) {
	for _, e := range evs {
		switch e.Kind {
		case events.UpdateStarted, events.UpdateProgress:
			c.in.UpdateLine = e.Message
		case events.UpdateFinished, events.UpdateFailed:
			c.in.UpdateLine = ""
			c.notify(traymodel.Notice{Topic: "tray.update", Title: "Update Strata", Body: e.Message, Urgent: e.Kind == events.UpdateFailed})
		}
	}
}

func hasKind(evs []events.Event, k events.Kind) bool {
	for _, e := range evs {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// readConfigs asks the service for the install's configs (the Model
// submenu), off the controller's goroutine; one read at a time.
func (c *Controller) readConfigs() {
	if c.readingConfigs {
		c.configsRead = false // ask again once this read is back
		return
	}
	c.readingConfigs = true
	ctx := c.ctx
	go func() {
		var l *controlapi.ConfigList
		cl, err := c.connectOrDefault()
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			l, err = cl.Configs(rctx)
			cancel()
		}
		c.post(func() {
			c.readingConfigs = false
			if err != nil {
				c.logf("listing the configs: %v", err)
				return
			}
			c.in.Configs = l
			c.show()
		})
	}()
}

func hasTopic(ns []traymodel.Notice, topic string) bool {
	for _, n := range ns {
		if n.Topic == topic {
			return true
		}
	}
	return false
}

// resolvePending ends the progress line once the server is ready again (or
// turns it into the failure).
// It reports whether an action the user started just finished well.
func (c *Controller) resolvePending() (succeeded bool) {
	p := c.in.Pending
	if p == nil {
		return false
	}
	done, failure := p.Resolve(c.in.State, c.now())
	switch {
	case failure != "":
		p.Err = failure
	case done:
		c.in.Pending = nil
		return p.Err == "" && c.in.State != nil && c.in.State.Server.Phase == controlapi.PhaseReady
	}
	return false
}

// startWords is how to start the service by hand: it needs an
// administrator (Windows: an administrator prompt; elsewhere sudo).
var startWords = map[bool]string{true: "as administrator: strata-service start", false: "sudo strata-service start"}[runtime.GOOS == "windows"]

// describe turns a watcher error into the reach and a line for the menu that
// says what to do.
func describe(err error) (traymodel.Reach, string) {
	switch {
	case err == nil:
		return traymodel.Unreachable, ""
	case watch.IsUnauthorized(err):
		// The watcher re-reads the token at every retry, so a new service
		// instance is picked up by itself; a refusal that stays is a token
		// this user cannot read or a stale copy.
		return traymodel.Unauthorized, "  it refused this tray's token; check that this user can read its control-token file"
	case err == controlapi.ErrNotRunning:
		// NewClient's bare error: no address file, so never started here.
		return traymodel.NotRunning, "  Open setup... to install it; or, " + startWords
	case errors.Is(err, controlapi.ErrNotRunning):
		return traymodel.Unreachable, "  stopped or restarting; to start it: " + startWords
	}
	return traymodel.Unreachable, "  " + err.Error()
}

func (c *Controller) notify(n traymodel.Notice) {
	if c.Notifier == nil {
		return
	}
	c.logf("notice: %s: %s", n.Title, n.Body)
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	if err := c.Notifier.Notify(ctx, n); err != nil {
		c.logf("notification %q not shown: %v", n.Title, err)
	}
}

func (c *Controller) click(id traymodel.ItemID) {
	now := c.now()
	if inv, ok := c.View.(interface{ Invalidate(traymodel.ItemID) }); ok && id.Checkable() {
		inv.Invalidate(id)
	}
	switch id {
	case traymodel.ItemVisionGPU, traymodel.ItemVisionCPU, traymodel.ItemVisionRemote, traymodel.ItemVisionOff:
		target := id.Placement()
		d := traymodel.DecideVision(c.in.State, target, c.in.RemoteName, now)
		switch {
		case d.Noop || c.busy:
		case d.OpenSetupPage != "":
			c.desktop(func(dk Desktop) error { return dk.OpenSetup(d.OpenSetupPage) })
		case c.in.State == nil:
		default:
			req := controlapi.VisionRequest{Placement: target}
			if settings.Placement(target).SecondPC() {
				req.Host = c.remoteAddr
			}
			st, name := c.in.State, c.in.RemoteName
			p := &traymodel.Pending{Action: "vision", Placement: target}
			// The service's dry run says whether the switch restarts
			// Strata; the question (or the notice) says so first.
			c.act("Switch vision to "+traymodel.PlacementName(target, name), p,
				func(ctx context.Context, cl controlapi.Owner) (traymodel.Decision, error) {
					dry := req
					dry.DryRun = true
					resp, err := cl.SetVision(ctx, dry)
					if err != nil {
						return traymodel.Decision{}, err
					}
					p.NoRestart = !resp.RestartNeeded
					return traymodel.DecideVisionChange(st, target, name, resp, now), nil
				},
				func(ctx context.Context, cl controlapi.Owner) error {
					_, err := cl.SetVision(ctx, req)
					return err
				})
		}
	case traymodel.ItemModel0, traymodel.ItemModel1, traymodel.ItemModel2, traymodel.ItemModel3,
		traymodel.ItemModel4, traymodel.ItemModel5, traymodel.ItemModel6, traymodel.ItemModel7:
		l := c.in.Configs
		i := id.ModelSlot()
		if c.busy || c.in.State == nil || l == nil || i >= len(l.Configs) || !l.Configs[i].Ready {
			break
		}
		e, running := l.Configs[i], l.Running
		d := traymodel.DecideModel(c.in.State, e.Tag, e.Running, now)
		if d.Noop {
			break
		}
		c.act("Switch the model to "+e.Tag, &traymodel.Pending{Action: "model", Placement: e.Tag},
			func(ctx context.Context, cl controlapi.Owner) (traymodel.Decision, error) {
				// The service's dry run: a request in flight, a text-only model.
				if r, err := cl.SwitchConfig(ctx, controlapi.ConfigRequest{Config: e.Path, IfRunning: running, DryRun: true}); err == nil {
					d = traymodel.WithBusy(d, r.Busy)
					if d.Confirm && r.TextOnly {
						const off = " Pictures are off for that model: the service found no image projector of its own in the Strata install."
						d.Explain += off
						d.Question = strings.TrimSuffix(d.Question, " Continue?") + off + " Continue?"
					}
				}
				return d, nil
			},
			func(_ context.Context, cl controlapi.Owner) error {
				// The user confirmed (or nothing was running); the config
				// meant is the one the menu showed as running. The service
				// answers once the new model is ready (or the old one is
				// back): its own bound, not a click's.
				ctx, cancel := context.WithTimeout(c.ctx, 15*time.Minute)
				defer cancel()
				_, err := cl.SwitchConfig(ctx, controlapi.ConfigRequest{Config: e.Path, IfRunning: running, Confirm: true})
				return err
			})
	case traymodel.ItemUpdate:
		if c.busy || c.in.State == nil {
			break
		}
		st := c.in.State
		c.act("Update Strata", &traymodel.Pending{Action: "update"},
			func(ctx context.Context, cl controlapi.Owner) (traymodel.Decision, error) {
				r, err := cl.UpdateStrata(ctx, controlapi.UpdateRequest{Check: true})
				if err != nil {
					return traymodel.Decision{}, err
				}
				if !r.Available {
					return traymodel.Decision{}, &saidError{r.Message}
				}
				return traymodel.WithBusy(traymodel.DecideUpdate(st, r.Message, now), r.Busy), nil
			},
			func(_ context.Context, cl controlapi.Owner) error {
				// An update takes minutes (Strata's setup, then its start):
				// its own bound, not a click's.
				ctx, cancel := context.WithTimeout(c.ctx, 30*time.Minute)
				defer cancel()
				r, err := cl.UpdateStrata(ctx, controlapi.UpdateRequest{Confirm: true})
				if err == nil && !r.Updated {
					// The update.failed event was notified already: once per failure.
					return &notifiedError{r.Message}
				}
				return err
			})
	case traymodel.ItemRepair:
		if c.busy || c.in.State == nil {
			break
		}
		st := c.in.State
		c.act("Put back what Strata's setup changed", &traymodel.Pending{Action: "repair"},
			func(ctx context.Context, cl controlapi.Owner) (traymodel.Decision, error) {
				// The service's dry run says what will change, in words.
				r, err := cl.RepairConfig(ctx, controlapi.RepairRequest{DryRun: true})
				if err != nil {
					return traymodel.Decision{}, err
				}
				if !r.RestartNeeded {
					return traymodel.Decision{}, &saidError{r.Message}
				}
				return traymodel.DecideRepair(st, r.Changes, r.Busy, now), nil
			},
			func(ctx context.Context, cl controlapi.Owner) error {
				_, err := cl.RepairConfig(ctx, controlapi.RepairRequest{Confirm: true})
				return err
			})
	case traymodel.ItemRestart:
		if c.busy || c.in.State == nil {
			break
		}
		action := "restart"
		if c.in.State.Server.Phase == controlapi.PhaseStopped {
			action = "start"
		}
		d := traymodel.DecideRestart(c.in.State, now)
		c.act("Restart Strata", &traymodel.Pending{Action: "restart"},
			func(context.Context, controlapi.Owner) (traymodel.Decision, error) { return d, nil },
			func(ctx context.Context, cl controlapi.Owner) error { return controlapi.ServerAction(ctx, cl, action) })
	case traymodel.ItemUnload:
		if c.busy || c.in.State == nil {
			break
		}
		d := traymodel.DecideUnload(c.in.State, now)
		if d.Noop {
			break // unloaded already
		}
		c.act(traymodel.UnloadTitle, &traymodel.Pending{Action: "unload"},
			func(context.Context, controlapi.Owner) (traymodel.Decision, error) { return d, nil },
			func(ctx context.Context, cl controlapi.Owner) error { return cl.Unload(ctx) })
	case traymodel.ItemOpenBrowser:
		if u := traymodel.BrowserURL(c.in.State); u != "" {
			c.desktop(func(dk Desktop) error { return dk.Open(u) })
		}
	case traymodel.ItemViewLogs:
		c.viewLogs()
	case traymodel.ItemSetup:
		c.desktop(func(dk Desktop) error { return dk.OpenSetup("") })
	case traymodel.ItemAutostart:
		if c.Autostart != nil {
			// Only ever changed here, by the user's click.
			want := !c.in.Autostart
			if err := c.Autostart.Set(want); err != nil {
				c.logf("changing the autostart setting: %v", err)
				c.notify(traymodel.Notice{Topic: "tray", Title: "Could not change Start tray at login", Body: err.Error()})
			} else {
				c.in.Autostart = want
			}
		}
	case traymodel.ItemFallback:
		if c.busy || c.in.State == nil {
			break
		}
		// No restart: the relay reads the setting for each picture.
		want := !c.in.FallbackCPU
		cl, err := c.connectOrDefault()
		if err == nil {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			_, err = cl.PatchSettings(ctx, controlapi.SettingsPatch{FallbackCPU: &want})
			cancel()
		}
		if err != nil {
			c.logf("changing the fallback setting: %v", err)
			c.notify(traymodel.Notice{Topic: "tray", Title: "Could not change " + traymodel.FallbackTitle, Body: err.Error()})
		} else {
			c.in.FallbackCPU = want
		}
	case traymodel.ItemLendCode:
		if c.in.Lending == nil || c.in.LendAction != "" || c.in.Lending.CodeAt(now) != "" {
			break // a valid code is shown: nothing to get
		}
		c.lend(traymodel.LendActionCode, "Get a new pairing code", traymodel.Decision{}, "lend", "code")
	case traymodel.ItemLendStop:
		if c.in.Lending == nil || c.in.LendAction != "" {
			break
		}
		c.lend(traymodel.LendActionStop, "Stop lending", traymodel.DecideStopLending(c.in.Lending), "lend", "stop")
	case traymodel.ItemQuit:
		if c.Quit != nil {
			c.Quit()
		}
		return
	}
	// A click on a check box toggles its mark in the toolkit: show the
	// model's truth again.
	c.show()
}

// readyAgain is the notice after a restart the user asked for.
func readyAgain(placement, remoteName string) string {
	if p := settings.Placement(placement); !p.ReadsPictures() {
		return "Strata is ready again; " + p.Pictures("") + "."
	}
	return "Strata is ready again; pictures are read on " + traymodel.PlacementName(placement, remoteName) + "."
}

// notifiedError is a failure the user was notified of already (from the
// service's event): act records it without a second notice.
type notifiedError struct{ msg string }

func (e *notifiedError) Error() string { return e.msg }

// act carries out a state-changing click off the controller's goroutine:
// decide (for a vision switch: the service's dry run) whether to confirm,
// confirm if so, call the API, then show progress (the pending line) until
// the server is ready again. A change that needs no confirming but has
// something to say (no restart) says it once it is done.
func (c *Controller) act(title string, p *traymodel.Pending, decide func(context.Context, controlapi.Owner) (traymodel.Decision, error), call func(context.Context, controlapi.Owner) error) {
	c.busy = true
	ctx := c.ctx
	go func() {
		connect := c.connectOrDefault
		var d traymodel.Decision
		err := func() error {
			cl, err := connect()
			if err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			if d, err = decide(rctx, cl); err != nil {
				return err
			}
			if d.Confirm && c.Desktop != nil {
				yes, asked := c.Desktop.Confirm(ctx, title, d.Question)
				if asked && !yes {
					return errCancelled
				}
				if !asked {
					// No dialog program: go ahead, and say what is happening.
					c.post(func() {
						c.notify(traymodel.Notice{Topic: "tray.action", Title: title, Body: d.Explain + " Going ahead: there is no dialog program (zenity) to ask with."})
					})
				}
			}
			return nil
		}()
		if errors.Is(err, errCancelled) {
			c.post(func() { c.busy = false; c.show() })
			return
		}
		var said *saidError
		if errors.As(err, &said) {
			c.post(func() {
				c.busy = false
				c.notify(traymodel.Notice{Topic: "tray.action", Title: title, Body: said.msg})
				c.show()
			})
			return
		}
		started := c.now()
		if err == nil {
			err = func() error {
				cl, err := connect()
				if err != nil {
					return err
				}
				rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				return call(rctx, cl)
			}()
		}
		c.post(func() {
			c.busy = false
			p.Started = started
			var told *notifiedError
			if err != nil {
				c.logf("%s: %v", title, err)
				p.Err = err.Error()
				// The menu is likely closed by now: say it where it is seen
				// (once: an update's failure was notified from its event).
				if !errors.As(err, &told) {
					c.notify(traymodel.Notice{Topic: "tray.action", Title: title + ": not done", Body: err.Error(), Urgent: true})
				}
			} else if !d.Confirm && d.Explain != "" {
				c.notify(traymodel.Notice{Topic: "tray.action", Title: title, Body: d.Explain})
			}
			c.in.Pending = p
			c.show()
		})
	}()
	c.show()
}

// lend runs a lending command (`strata-service lend code`, `lend stop`)
// with administrator rights, off the controller's goroutine: it asks first
// when d says so, shows the command under way in the menu, then reads the
// lending view again and says how it ended. It needs no service: a lending
// PC may run none.
func (c *Controller) lend(action, title string, d traymodel.Decision, args ...string) {
	if c.Desktop == nil {
		return
	}
	c.in.LendAction = action
	ctx := c.ctx
	go func() {
		err := func() error {
			if d.Confirm {
				yes, asked := c.Desktop.Confirm(ctx, title, d.Question)
				if asked && !yes {
					return errCancelled
				}
				if !asked {
					c.post(func() {
						c.notify(traymodel.Notice{Topic: "tray.action", Title: title, Body: d.Explain + " Going ahead: there is no dialog program (zenity) to ask with."})
					})
				}
			}
			// Stopping undoes the ssh server's setup too (Windows: minutes at most).
			rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			return c.Desktop.RunElevated(rctx, args...)
		}()
		c.post(func() {
			c.in.LendAction = ""
			c.readLending()
			switch {
			case errors.Is(err, errCancelled) || errors.Is(err, ErrDeclined):
			case err != nil:
				c.logf("%s: %v", title, err)
				c.notify(traymodel.Notice{Topic: "tray.action", Title: title + ": not done", Body: err.Error(), Urgent: true})
			case action == traymodel.LendActionCode && c.in.Lending.CodeAt(c.now()) != "":
				l := c.in.Lending
				c.notify(traymodel.Notice{Topic: "tray.action", Title: "Pairing code " + l.Code,
					Body: "Type it in the setup of the PC that runs Strata (its Second PC page). It works once, until " + traymodel.Clock(l.Expires, c.now()) + "."})
			case action == traymodel.LendActionCode:
				c.notify(traymodel.Notice{Topic: "tray.action", Title: title,
					Body: "The command ended well, but no valid code came back for this account: try again."})
			case action == traymodel.LendActionStop:
				c.notify(traymodel.Notice{Topic: "tray.action", Title: "Stopped lending this PC's GPU",
					Body: "The paired PCs can no longer read pictures here, and what lending changed is put back."})
			}
			c.show()
		})
	}()
	c.show()
}

// saidError: nothing to do, and the service said why (Strata is up to date).
type saidError struct{ msg string }

func (e *saidError) Error() string { return e.msg }

// errCancelled: the user said no to the confirmation.
var errCancelled = errors.New("cancelled")

func (c *Controller) desktop(f func(Desktop) error) {
	if c.Desktop == nil {
		return
	}
	if err := f(c.Desktop); err != nil {
		c.logf("%v", err)
		c.notify(traymodel.Notice{Topic: "tray", Title: "Could not open it", Body: err.Error()})
	}
}

// viewLogs opens the server's log file as the service names it (the service
// may log elsewhere than this user's default folders), else the log folder.
func (c *Controller) viewLogs() {
	target := locations.Path(locations.LogDir)
	ctx := c.ctx
	go func() {
		if cl, err := c.connectOrDefault(); err == nil {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			r, err := cl.Logs(lctx, 0)
			cancel()
			if err == nil && r.File != "" && fileExists(r.File) {
				target = r.File
			}
		}
		c.post(func() { c.desktop(func(dk Desktop) error { return dk.Open(target) }) })
	}()
}

func (c *Controller) connectOrDefault() (controlapi.Owner, error) {
	if c.Connect != nil {
		return c.Connect()
	}
	return watch.Connect() // the service's client: the owner over the API
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
