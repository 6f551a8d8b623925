package main

// `strata-service run`: the service's main loop. In a terminal it runs in
// the foreground with the server's output on the console; started by the
// service manager it runs as the OS service (kardianos/service) and logs to
// the service log. Either way it resolves the Strata install, supervises the
// server (service/supervisor), folds events into the state (service/state)
// and serves the control API (service/controlserver).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	kservice "github.com/kardianos/service"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
	"github.com/strata-companion/companion/internal/version"
	"github.com/strata-companion/companion/service/controlserver"
	"github.com/strata-companion/companion/service/state"
	"github.com/strata-companion/companion/service/supervisor"
)

// runOptions are `run`'s own flags.
type runOptions struct {
	controlAddr  string
	port         int
	restartDelay time.Duration
	startTimeout time.Duration
	stopTimeout  time.Duration
	foreground   bool
}

func init() {
	var o runOptions
	register(&command{
		name:    "run",
		summary: "run the Strata server supervised, with the control API (the service's main loop; in a terminal, in the foreground)",
		usage:   "strata-service run [--strata-root DIR] [--config FILE] [flags]",
		setFlags: func(fs *flag.FlagSet) {
			o = runOptions{}
			fs.StringVar(&o.controlAddr, "control-addr", "127.0.0.1:0", "where the control API listens (loopback only; port 0 picks a free one)")
			fs.IntVar(&o.port, "port", 0, "the Strata server's port (default: the config's port, else 8080)")
			fs.DurationVar(&o.restartDelay, "restart-delay", 2*time.Second, "the first delay before restarting a crashed server; it doubles up to 1 min")
			fs.DurationVar(&o.startTimeout, "start-timeout", 10*time.Minute, "how long the server may take to get ready")
			fs.DurationVar(&o.stopTimeout, "stop-timeout", 30*time.Second, "how long a stop waits before killing the server's process tree")
			fs.BoolVar(&o.foreground, "foreground", false, "run in the foreground even when not started from a terminal")
		},
		run: func(ctx context.Context, env *cliEnv, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			// One service per state folder: a second one would take over
			// control-addr/control-token and leave the first unreachable.
			inst, err := lockInstance()
			if err != nil {
				return err
			}
			defer inst.Unlock()
			// Wine runs services in session 1, where kardianos takes a
			// service for an interactive program: ask who started us first.
			if !o.foreground && startedByServiceManager() {
				return runAsService(env, o)
			}
			if o.foreground || kservice.Interactive() {
				logf := func(format string, a ...any) { fmt.Fprintf(env.stderr, "strata-service: "+format+"\n", a...) }
				return runDaemon(ctx, env, o, env.stdout, logf)
			}
			return runAsService(env, o)
		},
	})
}

// runAsService hands control to the service manager; program.Start and
// Stop run the daemon.
func runAsService(env *cliEnv, o runOptions) error {
	locations.EnsureDir(locations.LogDir)
	lj := &lumberjack.Logger{Filename: locations.ServiceLogFile(), MaxSize: 10, MaxBackups: 3}
	defer lj.Close()
	lg := log.New(lj, "", log.LstdFlags)
	p := &program{env: env, opts: o, logf: func(format string, a ...any) { lg.Printf(format, a...) }}
	if handled, err := runUnderServiceManager(p); handled {
		return err
	}
	s, err := kservice.New(p, serviceConfig(nil))
	if err != nil {
		return err
	}
	return s.Run()
}

// program adapts the daemon to kardianos' Start/Stop.
type program struct {
	env    *cliEnv
	opts   runOptions
	logf   func(string, ...any)
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (p *program) Start(kservice.Service) error { return p.start() }
func (p *program) Stop(kservice.Service) error  { p.stop(); return nil }

func (p *program) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		if err := runDaemon(ctx, p.env, p.opts, nil, p.logf); err != nil {
			p.logf("the service stopped: %v", err)
		}
	}()
	return nil
}

func (p *program) stop() {
	p.once.Do(func() {
		if p.cancel == nil {
			return
		}
		p.cancel()
		// The supervisor stops Strata (SIGTERM / Ctrl-Break, then the tree);
		// wait for it, a little longer than its own kill timeout.
		select {
		case <-p.done:
		case <-time.After(p.opts.stopTimeout + 15*time.Second):
			p.logf("the service did not stop in time")
		}
	})
}

// noInstall answers server actions when no Strata install could be used.
type noInstall struct{ err error }

func (n noInstall) Start(context.Context) error   { return n.err }
func (n noInstall) Stop(context.Context) error    { return nil }
func (n noInstall) Restart(context.Context) error { return n.err }

// runDaemon is the service: it returns when ctx ends (after stopping Strata).
func runDaemon(ctx context.Context, env *cliEnv, o runOptions, console io.Writer, logf func(string, ...any)) error {
	bus := events.NewBus(2000)
	initial := controlapi.State{Service: controlapi.ServiceInfo{Version: version.Version, Started: time.Now(), PID: os.Getpid()}}
	s, err := settings.LoadDefault()
	if err != nil {
		logf("%v", err)
		s = &settings.Settings{}
	}
	in, resolveErr := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot, Config: env.configPath, Settings: s})
	if resolveErr == nil {
		initial.Config = controlapi.ConfigInfo{StrataRoot: in.Root, Path: in.ConfigInUse, Valid: true}
		if c, err := strataconfig.Read(in.ConfigInUse); err != nil {
			initial.Config.Valid, initial.Config.Problem = false, err.Error()
		} else {
			// A config naming the relay leaves the placement to the settings.
			initial.Vision.Placement = string(backend.Placement(c, s))
			if c.Vision == nil {
				initial.Vision.Encoder = controlapi.EncoderOff
			}
			if len(c.Problems) > 0 {
				initial.Config.Valid, initial.Config.Problem = false, c.Problems[0].String()
			}
		}
	} else {
		initial.Config.Problem = resolveErr.Error()
	}
	tracker := state.New(bus, initial)
	// The one owner of the config and the settings; its events go to the
	// tracker after each change is on disk.
	publish := func(e events.Event) { tracker.Publish(e) }
	var owner *backend.Backend
	if resolveErr == nil {
		owner = newBackend(env, in, publish)
	}
	tracker.OnEvent = func(e events.Event) {
		switch e.Kind {
		case events.ServerProgress, events.ExpertCache:
			if console != nil {
				return // the console already shows the server's own lines
			}
		}
		logf("%s: %s", e.Kind, e.Message)
	}

	var sup *supervisor.Supervisor
	var ctl controlserver.Control
	if resolveErr != nil {
		ctl = noInstall{fmt.Errorf("no Strata install to run: %v", resolveErr)}
		tracker.Publish(events.Event{Kind: events.ServerFailed, Message: resolveErr.Error(), Details: map[string]any{"reason": "install"}})
	} else {
		if _, err := locations.EnsureDir(locations.LogDir); err != nil {
			logf("cannot create the log folder: %v", err)
		}
		first := o.restartDelay
		sup, err = supervisor.New(supervisor.Config{
			StrataRoot:   in.Root,
			ConfigPath:   in.ConfigInUse,
			Port:         o.port,
			Python:       in.Python,
			LogFile:      locations.ServerLogFile(),
			Console:      console,
			Events:       tracker,
			Logf:         logf,
			StartTimeout: o.startTimeout,
			StopTimeout:  o.stopTimeout,
			Backoff: func(n int) time.Duration {
				d := first
				for i := 1; i < n && d < time.Minute; i++ {
					d *= 2
				}
				return min(d, time.Minute)
			},
		})
		if err != nil {
			return err
		}
		ctl = sup
	}

	srv, err := controlserver.New(controlserver.Backend{
		Bus:     bus,
		State:   tracker.Snapshot,
		Control: ctl,
		Vision: func(rctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
			if resolveErr != nil {
				return nil, &controlserver.RequestError{Code: 409, Err: fmt.Errorf("no Strata install to change: %v", resolveErr)}
			}
			return applyVision(rctx, owner, sup, req)
		},
		Settings: func(rctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
			b := owner
			if b == nil {
				b = newBackend(env, nil, publish) // settings need no install
			}
			if _, err := b.PatchSettings(rctx, p); err != nil {
				return nil, httpError(err)
			}
			st := tracker.Snapshot()
			return &st, nil
		},
		Relay: func(rctx context.Context, r controlapi.RelayReport) error {
			b := owner
			if b == nil {
				b = newBackend(env, nil, publish)
			}
			return httpError(b.RelayReport(rctx, r))
		},
		Logs: func(n int) (*controlapi.LogsResponse, error) {
			lines, err := supervisor.TailFile(locations.ServerLogFile(), n)
			if errors.Is(err, os.ErrNotExist) {
				lines, err = []string{}, nil
			}
			return &controlapi.LogsResponse{File: locations.ServerLogFile(), Lines: lines}, err
		},
	})
	if err != nil {
		return err
	}
	l, err := controlserver.Listen(o.controlAddr)
	if err != nil {
		return err
	}
	if _, err := locations.EnsureDir(locations.StateDir); err != nil {
		l.Close()
		return fmt.Errorf("creating the state folder %s: %w", locations.Path(locations.StateDir), err)
	}
	addr := l.Addr().String()
	if err := controlserver.WriteFiles(locations.ControlAddrFile(), locations.ControlTokenFile(), addr, srv.Token()); err != nil {
		l.Close()
		return fmt.Errorf("publishing the control API address: %w (run as the service's account or an administrator)", err)
	}
	defer controlserver.RemoveFiles(locations.ControlAddrFile(), locations.ControlTokenFile(), addr, srv.Token())
	logf("control API on http://%s (token in %s)", addr, locations.ControlTokenFile())

	var wg sync.WaitGroup
	if sup != nil {
		wg.Add(1)
		go func() { defer wg.Done(); sup.Run(ctx) }()
	}
	err = srv.Serve(ctx, l)
	wg.Wait()
	return err
}

// newBackend is the service's owner of the config and the settings (in may
// be nil: settings only).
func newBackend(env *cliEnv, in *stratainstall.Install, publish func(events.Event)) *backend.Backend {
	o := backend.Options{SettingsPath: locations.SettingsFile(), Publish: publish, VRAMTotalMiB: serverVRAM}
	if in != nil {
		o.StrataRoot, o.ConfigPath = in.Root, in.ConfigInUse
	}
	return backend.New(o)
}

// httpError maps the backend's refusals to HTTP: a bad request 400, a
// conflict (another writer, a person's edit, the lock held) 409 with the
// reason; anything else stays a 500.
func httpError(err error) error {
	var re *backend.RequestError
	var ce *backend.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &controlserver.RequestError{Code: 409, Err: err}
	case errors.As(err, &re):
		return &controlserver.RequestError{Code: 400, Err: err}
	}
	return err
}

// applyVision is POST /v1/vision: the backend makes the change; a change
// that edits the config (to or from this PC's GPU) restarts Strata unless
// the request says "restart": false.
func applyVision(ctx context.Context, owner *backend.Backend, sup *supervisor.Supervisor, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	res, err := owner.SetVision(ctx, req)
	if err != nil {
		return nil, httpError(err)
	}
	resp := &controlapi.VisionResponse{Diff: res.Diff, Written: res.ConfigWritten, Backup: res.Backup,
		RestartNeeded: res.RestartNeeded, Message: res.Message, Placement: string(res.Placement), SettingsChanged: res.SettingsChanged}
	if res.ConfigWritten && (req.Restart == nil || *req.Restart) && sup != nil {
		if err := sup.Restart(ctx); err != nil {
			return resp, err
		}
		resp.Restarted = true
	}
	return resp, nil
}

// lockInstance takes the state folder's service lock, or says which
// process holds it.
func lockInstance() (*filelock.Lock, error) {
	dir, err := locations.EnsureDir(locations.StateDir)
	if err != nil {
		return nil, fmt.Errorf("creating the state folder %s: %w", locations.Path(locations.StateDir), err)
	}
	path := filepath.Join(dir, "service.lock")
	l, err := filelock.TryLock(path)
	var he *filelock.HeldError
	if errors.As(err, &he) {
		who := "another strata-service run"
		if he.PID > 0 {
			who = fmt.Sprintf("strata-service run (process %d)", he.PID)
		}
		return nil, &exitCode{code: 1, err: fmt.Errorf("%s already serves %s: use it (strata-service status), or stop it first (strata-service stop, or end process %d)", who, dir, he.PID)}
	}
	if err != nil {
		return nil, err
	}
	if err := l.WritePID(); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("writing the service lock %s: %w", path, err)
	}
	return l, nil
}
