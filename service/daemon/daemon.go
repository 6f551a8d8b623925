// Package daemon is strata-service's main loop (`strata-service run`): it
// resolves the Strata install, supervises the server (service/supervisor),
// folds events into the state (service/state), hosts the one owner of the
// config and the settings (internal/backend) and serves the control API
// (service/controlserver). The OS-service wrapper and the CLI are in
// service/ (package main).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/fserr"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
	"github.com/strata-companion/companion/internal/version"
	"github.com/strata-companion/companion/service/controlserver"
	"github.com/strata-companion/companion/service/state"
	"github.com/strata-companion/companion/service/supervisor"
)

// Options are `run`'s settings.
type Options struct {
	// StrataRoot and ConfigPath: --strata-root / --config ("" = from the
	// settings). Given in a terminal they are recorded in the settings and
	// run; under the service manager (FlagsAreFallback) they are only the
	// choice when the settings name none (an older install baked them into
	// the service's command line: the settings, changed by a model switch,
	// win over it).
	StrataRoot, ConfigPath string
	FlagsAreFallback       bool
	// ControlAddr is where the control API listens (loopback; port 0 picks one).
	ControlAddr string
	// Port is the Strata server's port (0: the config's, else 8080).
	Port                                    int
	RestartDelay, StartTimeout, StopTimeout time.Duration
	// Console receives the server's output in a terminal (nil as a service).
	Console io.Writer
	// Logf is the service's own log.
	Logf func(format string, a ...any)
	// ForeignEvery is how often a port held by a Strata the service did not
	// start is looked at again (default 5 s); the service starts its own
	// once the port is free.
	ForeignEvery time.Duration
}

// Daemon is the service: it owns the backend (the one writer of the config
// and the settings) and the supervisor of the config that runs, and can
// switch that config at run time (stop, switch, start, one event). The
// settings say which config runs.
type Daemon struct {
	o       Options
	logf    func(string, ...any)
	bus     *events.Bus
	tracker *state.Tracker
	srv     *controlserver.Server

	// switchMu serialises what replaces the running config (a switch, an
	// update of Strata); it is held for the whole of one.
	switchMu sync.Mutex

	mu  sync.Mutex // guards cur, runCtx and op
	cur *running
	op  *opRunning // the switch, update or repair under way
	// engineKept is Strata's own "[!]" line when the last update left the
	// engine older than its files need ("-": no line), for --check.
	engineKept string
	// runCtx is Run's context (nil before Run): supervisors started by a
	// switch live under it.
	runCtx context.Context
	wg     sync.WaitGroup
}

// running is one config under supervision (or the reason there is none).
type running struct {
	in         *stratainstall.Install // nil: no install
	resolveErr error
	owner      *backend.Backend // nil without an install
	sup        *supervisor.Supervisor
	foreign    bool // a Strata the service did not start held the port at start
	watching   atomic.Bool
	startedAt  atomic.Int64    // when the server's start began (unix ns), to record a good start's time
	ctx        context.Context // the supervisor's (set by start)
	cancel     context.CancelFunc
	done       chan struct{}
	// expect is what the companion knows of the config's keys at start
	// (host, api_key, port), to tell when Strata's setup dropped them.
	// The companion's own writes to the config (a vision move, a repair)
	// update it (ownWrite); Strata's setup's do not.
	expect atomic.Pointer[configKeys]
}

func (r *running) path() string {
	if r == nil || r.in == nil {
		return ""
	}
	return r.in.ConfigInUse
}

// Run is the service: it returns when ctx ends (after stopping Strata).
// The caller holds the instance lock (LockInstance).
func Run(ctx context.Context, o Options) error {
	d, err := New(ctx, o)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// New resolves the install and config to run (the settings, or the flags
// as Options says) and prepares the control API; Run starts them.
func New(ctx context.Context, o Options) (*Daemon, error) {
	d := &Daemon{o: o, logf: o.Logf, bus: events.NewBus(2000)}
	if d.logf == nil {
		d.logf = func(string, ...any) {}
	}
	if d.o.ForeignEvery == 0 {
		d.o.ForeignEvery = 5 * time.Second
	}
	initial := controlapi.State{Service: controlapi.ServiceInfo{Version: version.Version, Started: time.Now(), PID: os.Getpid()}}
	s, err := settings.LoadDefault()
	if err != nil {
		d.logf("%v", err)
		s = &settings.Settings{}
	}
	ro := stratainstall.Options{Root: o.StrataRoot, Config: o.ConfigPath, Settings: s}
	explicit := o.StrataRoot != "" || o.ConfigPath != ""
	if explicit && o.FlagsAreFallback && s.ConfigPath != "" {
		if _, err := os.Stat(s.ConfigPath); err == nil {
			// The settings say which config runs; the service's command
			// line (an older install) only chose the first one.
			ro = stratainstall.Options{Settings: s}
			explicit = false
		}
	}
	in, resolveErr := stratainstall.ResolveContext(ctx, ro)
	d.tracker = state.New(d.bus, initial)
	d.tracker.OnEvent = func(e events.Event) {
		switch e.Kind {
		case events.ServerProgress, events.ExpertCache, events.UpdateProgress:
			if o.Console != nil {
				return // the console already shows the server's own lines
			}
		}
		d.logf("%s: %s", e.Kind, eventWords(e))
	}
	d.tracker.Update(func(st *controlapi.State) { st.Config, st.Vision = configState(in, resolveErr, s) })
	if resolveErr == nil && explicit && (!pathcmp.Same(s.ConfigPath, in.ConfigInUse) || !pathcmp.Same(s.StrataRoot, in.Root)) {
		// Named by hand: the settings record it, so they keep saying
		// which config runs.
		if _, err := newBackend(nil, d.publish).Update(ctx, "the config in use", func(s *settings.Settings) error {
			s.StrataRoot, s.ConfigPath = in.Root, in.ConfigInUse
			return nil
		}); err != nil {
			d.logf("recording the config in use in the settings: %v", err)
		}
	}
	cur, err := d.prepare(in, resolveErr, false)
	if err != nil {
		return nil, err
	}
	d.cur = cur
	if err := d.newServer(); err != nil {
		return nil, err
	}
	return d, nil
}

// configState is the state's view of an install and its config.
func configState(in *stratainstall.Install, resolveErr error, s *settings.Settings) (controlapi.ConfigInfo, controlapi.VisionState) {
	var ci controlapi.ConfigInfo
	var vis controlapi.VisionState
	if resolveErr != nil {
		ci.Problem = resolveErr.Error()
		vis.Encoder = controlapi.EncoderUnknown
		return ci, vis
	}
	ci = controlapi.ConfigInfo{StrataRoot: in.Root, Path: in.ConfigInUse, Valid: true}
	vis.Encoder = controlapi.EncoderUnknown
	c, err := strataconfig.Read(in.ConfigInUse)
	if err != nil {
		ci.Valid, ci.Problem = false, err.Error()
		return ci, vis
	}
	// A config naming the relay leaves the placement to the settings.
	vis.Placement = string(backend.Placement(c, s))
	if c.Vision == nil {
		vis.Encoder = controlapi.EncoderOff
	}
	if len(c.Problems) > 0 {
		ci.Valid, ci.Problem = false, c.Problems[0].String()
	}
	return ci, vis
}

// publish is the daemon's one way into the state and the event stream;
// the supervisors publish through it too, so the daemon sees a port held
// by another Strata and a server getting ready.
func (d *Daemon) publish(e events.Event) events.Event {
	if e.Kind == events.ConfigChanged {
		if c := events.Get[events.ConfigChangedDetails](e); c.ConfigWritten {
			if r := d.current(); r != nil && r.in != nil && sameFile(c.Path, r.path()) {
				r.ownWrite(c.Backup)
			}
		}
	}
	return d.tracker.Publish(e)
}

// supPublisher is what one supervisor publishes through.
type supPublisher struct {
	d *Daemon
	r *running
}

func (p supPublisher) Publish(e events.Event) events.Event {
	switch e.Kind {
	case events.ServerStarting, events.ServerRestarting:
		p.r.startedAt.Store(time.Now().UnixNano())
	case events.ServerReady:
		p.d.addVersion(p.r, &e)
		if at := p.r.startedAt.Swap(0); at > 0 {
			p.d.recordStart(p.r.path(), time.Since(time.Unix(0, at)))
		}
	case events.ServerStopped:
		// The supervisor ends with its context: a switch, an update or a
		// repair under way says which, not "the service is stopping".
		p.d.mu.Lock()
		op := p.d.op
		p.d.mu.Unlock()
		if op != nil && e.Message == supervisor.StoppedWithService {
			e.Message = "the Strata server was stopped for " + op.what
		}
	}
	out := p.d.publish(e)
	if e.Kind == events.ServerFailed && strings.Contains(e.Message, "already in use") {
		go p.d.watchForeign(p.r)
	}
	return out
}

// prepare makes the supervisor (and the backend) for in; nothing runs yet.
func (d *Daemon) prepare(in *stratainstall.Install, resolveErr error, stopped bool) (*running, error) {
	r := &running{in: in, resolveErr: resolveErr}
	if resolveErr != nil {
		return r, nil
	}
	r.owner = newBackend(in, d.publish)
	if c, err := strataconfig.Read(in.ConfigInUse); err == nil {
		k := keysOf(c) // what Strata's setup may drop, as it is now
		r.expect.Store(&k)
	}
	if _, err := locations.EnsureDir(locations.LogDir); err != nil {
		d.logf("cannot create the log folder: %v", fserr.Explain(err, locations.Path(locations.LogDir)))
	}
	first := d.o.RestartDelay
	// A Strata the service did not start holding the port: name it and
	// wait for the port instead of starting into it.
	r.foreign = d.foreignOnPort(in) != nil
	sup, err := supervisor.New(supervisor.Config{
		StrataRoot:   in.Root,
		ConfigPath:   in.ConfigInUse,
		PIDFile:      filepath.Join(locations.Path(locations.StateDir), "strata-server.pid"),
		Port:         d.o.Port,
		Python:       in.Python,
		LogFile:      locations.ServerLogFile(),
		Console:      d.o.Console,
		Events:       supPublisher{d, r},
		Logf:         d.logf,
		StartTimeout: d.o.StartTimeout,
		StopTimeout:  d.o.StopTimeout,
		StartStopped: r.foreign || stopped,
		Backoff: func(n int) time.Duration {
			d := first
			for i := 1; i < n && d < time.Minute; i++ {
				d *= 2
			}
			return min(d, time.Minute)
		},
	})
	if err != nil {
		return nil, err
	}
	r.sup = sup
	return r, nil
}

// current is the config under supervision now.
func (d *Daemon) current() *running {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// start runs r's supervisor under ctx (Run's); r becomes current.
func (d *Daemon) start(ctx context.Context, r *running) {
	// r's fields are set before it becomes current: the API's goroutines
	// read them through current() only.
	var sctx context.Context
	if r.sup != nil {
		var cancel context.CancelFunc
		sctx, cancel = context.WithCancel(ctx)
		r.ctx, r.cancel, r.done = sctx, cancel, make(chan struct{})
	}
	d.mu.Lock()
	d.cur = r
	d.mu.Unlock()
	d.useAccounts(r)
	if r.sup == nil {
		if r.resolveErr != nil {
			d.publish(events.New(r.resolveErr.Error(), events.ServerFailedDetails{Reason: "install"}))
		}
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(r.done)
		r.sup.Run(sctx)
	}()
	d.watchConfig(sctx, r)
	if r.foreign {
		go d.watchForeign(r)
	}
}

// stop ends r's supervisor (it stops Strata) and waits for it.
func (d *Daemon) stop(r *running) {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
}

// The compiler holds the daemon to the owner's interface: it is what every
// route of the control API calls.
var _ controlapi.Owner = (*Daemon)(nil)

// supervisor is the current config's supervisor, or why there is none.
func (d *Daemon) supervisor() (*supervisor.Supervisor, error) {
	r := d.current()
	if r.sup == nil {
		return nil, fmt.Errorf("no Strata install to run: %v", r.resolveErr)
	}
	if r.done != nil {
		select {
		case <-r.done:
			// Its supervisor ended: a switch or an update is under way.
			return nil, errors.New("the service is switching Strata to another config or updating it: try again in a moment")
		default:
		}
	}
	return r.sup, nil
}

// Start starts the supervised Strata server (POST /v1/server/start).
func (d *Daemon) Start(ctx context.Context) error {
	sup, err := d.supervisor()
	if err != nil {
		return err
	}
	return sup.Start(ctx)
}

// Stop stops it (POST /v1/server/stop); with no supervisor there is
// nothing running to stop.
func (d *Daemon) Stop(ctx context.Context) error {
	sup, err := d.supervisor()
	if err != nil {
		return nil
	}
	return sup.Stop(ctx)
}

// Restart restarts it (POST /v1/server/restart).
func (d *Daemon) Restart(ctx context.Context) error {
	sup, err := d.supervisor()
	if err != nil {
		return err
	}
	return sup.Restart(ctx)
}

// Unload has the running Strata unload its model (POST /v1/server/unload).
func (d *Daemon) Unload(ctx context.Context) error {
	sup, err := d.supervisor()
	if err != nil {
		return controlapi.Conflict(err)
	}
	return sup.Unload(ctx)
}

// owner is the backend of the config that runs, or one for the settings
// alone when there is no install (settings need none).
func (d *Daemon) owner() *backend.Backend {
	if r := d.current(); r.owner != nil {
		return r.owner
	}
	return newBackend(nil, d.publish)
}

// State is the service's snapshot (GET /v1/state), with the settings as
// clients need them, read now (a settings.changed event comes before it).
func (d *Daemon) State(context.Context) (*controlapi.State, error) {
	st := d.tracker.Snapshot()
	if s, err := d.owner().Settings(); err == nil {
		st.Settings = controlapi.ViewOf(s)
	}
	return &st, nil
}

// SetVision is POST /v1/vision: a change to the config that runs (a
// caller naming another file is refused: nothing is changed in the wrong
// one).
func (d *Daemon) SetVision(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	r := d.current()
	if r.resolveErr != nil {
		return nil, controlapi.Conflict(fmt.Errorf("no Strata install to change: %v; choose one first (strata-service model use, or the setup)", r.resolveErr))
	}
	if req.Config != "" && !pathcmp.Same(req.Config, r.path()) {
		return nil, controlapi.Conflict(fmt.Errorf("the service runs %s, not %s: nothing was changed; switch to it first (strata-service model use)", r.path(), req.Config))
	}
	return applyVision(ctx, r.owner, r.sup, req)
}

// PatchSettings is POST /v1/settings.
func (d *Daemon) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
	if _, err := d.owner().PatchSettings(ctx, p); err != nil {
		return nil, err
	}
	return d.State(ctx)
}

// relayReport folds what the relay reported (POST /v1/relay).
func (d *Daemon) relayReport(ctx context.Context, r controlapi.RelayReport) error {
	if err := d.owner().RelayReport(ctx, r); err != nil {
		return err
	}
	d.tracker.SetNEmbd(r.NEmbd)
	return nil
}

// Remote is the recorded second PC (GET /v1/remote).
func (d *Daemon) Remote(ctx context.Context) (*settings.Remote, error) {
	return d.owner().Paired(ctx)
}

// RecordRemote records what the second-PC code did (POST /v1/remote).
func (d *Daemon) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	rm, err := d.owner().RecordRemote(ctx, rec)
	if err == nil {
		if _, server := accountsOf(d.current()); server != nil {
			grantKey(server, d.logf) // a key made by this pairing
		}
	}
	return rm, err
}

// Logs is the server log's last lines (GET /v1/logs).
func (d *Daemon) Logs(_ context.Context, n int) (*controlapi.LogsResponse, error) {
	lines, err := supervisor.TailFile(locations.ServerLogFile(), n)
	if errors.Is(err, os.ErrNotExist) {
		lines, err = []string{}, nil
	}
	return &controlapi.LogsResponse{File: locations.ServerLogFile(), Lines: lines}, err
}

func (d *Daemon) newServer() error {
	srv, err := controlserver.New(controlserver.Backend{
		Bus:   d.bus,
		Owner: d,
		RelayStarted: func(secret string) bool {
			r := d.current()
			return r != nil && r.sup != nil && r.sup.StartedRelay(secret)
		},
		Relay: d.relayReport,
	})
	d.srv = srv
	return err
}

// Run serves the control API and supervises the config until ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	l, err := controlserver.Listen(d.o.ControlAddr)
	if err != nil {
		return err
	}
	if _, err := locations.EnsureDir(locations.StateDir); err != nil {
		l.Close()
		return fmt.Errorf("creating the state folder: %w", fserr.Explain(err, locations.Path(locations.StateDir)))
	}
	addr := l.Addr().String()
	// Who may change things: the install's owner and the administrators
	// (the operator token's file); who reports for the relay: the account
	// that runs Strata's server (the relay is its child). A switch to
	// another install hands both on (useAccounts in start).
	owner, server := accountsOf(d.current())
	files := controlserver.Files{Addr: locations.ControlAddrFile(), Read: locations.ControlTokenFile(),
		Operator: locations.ControlOperatorTokenFile(), Relay: locations.RelayTokenFile()}
	if err := d.srv.Publish(files, addr, owner, server); err != nil {
		l.Close()
		return fmt.Errorf("publishing the control API address: %w", fserr.Explain(err, locations.Path(locations.StateDir)))
	}
	defer d.srv.Unpublish(files, addr)
	d.logf("control API on http://%s (read token in %s; changes only with %s, readable by %s)", addr, files.Read, files.Operator, owner)

	d.mu.Lock()
	d.runCtx = ctx
	cur := d.cur
	d.mu.Unlock()
	d.switchMu.Lock()
	d.start(ctx, cur)
	d.switchMu.Unlock()
	err = d.srv.Serve(ctx, l)
	// A switch under way finishes (or sees ctx end) before the wait.
	d.switchMu.Lock()
	//lint:ignore SA2001 a barrier: taking the lock waits for a switch under way; nothing is guarded here
	d.switchMu.Unlock()
	d.wg.Wait()
	return err
}

// eventWords is an event's message for the service's log (events.Event.Words).
func eventWords(e events.Event) string { return e.Words() }

// accountsOf is r's install's owner (nil: an administrator's, or no
// install) and the account that runs its Strata (nil: the service's own).
func accountsOf(r *running) (owner, server *account.Account) {
	if r == nil || r.in == nil {
		return nil, nil
	}
	if a, err := account.OwnerOf(r.in.Root); err == nil && !a.Privileged {
		owner = a
	}
	py := r.in.Python
	if py == "" {
		py = supervisor.VenvPython(r.in.Root)
	}
	if a, err := account.ServerAccount(r.in.Root, py); err == nil {
		server = a
	}
	return owner, server
}

// useAccounts hands the operator token to r's owner, and the relay token
// and the companion's key to the account that runs r's Strata (at the
// start, and after a switch to another install).
func (d *Daemon) useAccounts(r *running) {
	owner, server := accountsOf(r)
	if err := d.srv.SetOwner(owner); err != nil {
		d.logf("giving the operator token to %s: %v", owner, err)
	}
	if err := d.srv.SetRelay(server); err != nil {
		d.logf("giving the relay token to %s: %v", server, err)
	}
	if server != nil {
		grantKey(server, d.logf)
	}
}

// grantKey lets a (the account that runs Strata's server, and so the
// relay) read the companion's own ssh key, and no one else.
func grantKey(a *account.Account, logf func(string, ...any)) {
	key := locations.RelayKeyFile()
	if _, err := os.Stat(key); err != nil {
		return
	}
	if err := account.GrantRead(key, locations.Path(locations.SecretsDir), a); err != nil {
		logf("cannot let %s read the companion's key %s (remote pictures will fail): %v", a, key, err)
	}
}

// newBackend is the service's owner of the config and the settings (in may
// be nil: settings only).
func newBackend(in *stratainstall.Install, publish func(events.Event) events.Event) *backend.Backend {
	o := backend.Options{SettingsPath: locations.SettingsFile(), Publish: func(e events.Event) { publish(e) }, VRAMTotalMiB: ServerVRAM}
	if in != nil {
		o.StrataRoot, o.ConfigPath = in.Root, in.ConfigInUse
	}
	return backend.New(o)
}

// applyVision is POST /v1/vision: the backend makes the change; a change
// that edits the config (to or from this PC's GPU) restarts Strata unless
// the request says "restart": false.
func applyVision(ctx context.Context, owner *backend.Backend, sup *supervisor.Supervisor, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	res, err := owner.SetVision(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := res.Response()
	if res.ConfigWritten && (req.Restart == nil || *req.Restart) && sup != nil {
		if err := sup.Restart(ctx); err != nil {
			return resp, err
		}
		resp.Restarted = true
	}
	return resp, nil
}

// AlreadyRunningError: another service holds the state folder.
type AlreadyRunningError struct {
	PID int
	Dir string
}

func (e *AlreadyRunningError) Error() string {
	who := "another strata-service run"
	if e.PID > 0 {
		who = fmt.Sprintf("strata-service run (process %d)", e.PID)
	}
	return fmt.Sprintf("%s already serves %s: use it (strata-service status), or stop it first (strata-service stop, or end process %d)", who, e.Dir, e.PID)
}

// LockInstance takes the state folder's service lock (one service per
// state folder: a second one would take over control-addr/control-token
// and leave the first unreachable), or says which process holds it.
func LockInstance() (*filelock.Lock, error) {
	dir, err := locations.EnsureDir(locations.StateDir)
	if err != nil {
		return nil, fmt.Errorf("creating the state folder: %w", fserr.Explain(err, locations.Path(locations.StateDir)))
	}
	path := filepath.Join(dir, "service.lock")
	l, err := filelock.TryLock(path)
	var he *filelock.HeldError
	if errors.As(err, &he) {
		return nil, &AlreadyRunningError{PID: he.PID, Dir: dir}
	}
	if err != nil {
		return nil, err
	}
	if err := l.WritePID(); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("writing the service lock %s: %w", path, fserr.Explain(err, dir))
	}
	return l, nil
}

// ServerVRAM is the largest NVIDIA GPU's memory (0 when unknown), asked only
// when the config has no --vram-reserve-mib yet (the only use of it).
func ServerVRAM(ctx context.Context, configPath string) int {
	if c, err := strataconfig.Read(configPath); err == nil && c.VRAMReserveMiB() > 0 {
		return 0
	}
	r := probe.Probe(ctx, probe.Options{})
	best := 0
	for _, g := range r.GPUs {
		best = max(best, g.TotalMiB)
	}
	return best
}
