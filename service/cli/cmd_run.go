package cli

// `strata-service run`: the service's main loop. In a terminal it runs in
// the foreground with the server's output on the console; started by the
// service manager it runs as the OS service (kardianos/service) and logs to
// the service log. Either way it resolves the Strata install, supervises the
// server (service/supervisor), folds events into the state (service/state)
// and serves the control API (service/controlserver).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	kservice "github.com/kardianos/service"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/service/daemon"
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

// runCmd is `run`: the service's main loop.
func runCmd(env *cliEnv) *ffcli.Command {
	var o runOptions
	return &ffcli.Command{
		Name:       "run",
		ShortHelp:  "run the Strata server supervised, with the control API (the service's main loop; in a terminal, in the foreground)",
		ShortUsage: "strata-service run [--strata-root DIR] [--config FILE] [flags]",
		FlagSet: env.flagSet("run", func(fs *flag.FlagSet) {
			o = runOptions{}
			fs.StringVar(&o.controlAddr, "control-addr", "127.0.0.1:0", "where the control API listens (loopback only; port 0 picks a free one)")
			fs.IntVar(&o.port, "port", 0, "the Strata server's port (default: the config's port, else 8080)")
			fs.DurationVar(&o.restartDelay, "restart-delay", 2*time.Second, "the first delay before restarting a crashed server; it doubles up to 1 min")
			fs.DurationVar(&o.startTimeout, "start-timeout", 10*time.Minute, "how long the server may take to get ready")
			fs.DurationVar(&o.stopTimeout, "stop-timeout", 30*time.Second, "how long a stop waits before killing the server's process tree")
			fs.BoolVar(&o.foreground, "foreground", false, "run in the foreground even when not started from a terminal")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			// One service per state folder: a second one would take over
			// control-addr/control-token and leave the first unreachable.
			inst, err := daemon.LockInstance()
			if err != nil {
				return &exitCode{code: 1, err: err}
			}
			defer inst.Unlock()
			// Wine runs services in session 1, where kardianos takes a
			// service for an interactive program: ask who started us first.
			if !o.foreground && startedByServiceManager() {
				return runAsService(env, o)
			}
			if o.foreground || kservice.Interactive() {
				logf := func(format string, a ...any) { fmt.Fprintf(env.stderr, "strata-service: "+format+"\n", a...) }
				return daemon.Run(ctx, o.daemonOptions(env, env.stdout, logf))
			}
			return runAsService(env, o)
		},
	}
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
		o := p.opts.daemonOptions(p.env, nil, p.logf)
		// An older install baked --strata-root/--config into the service's
		// command line: they choose only when the settings name none.
		o.FlagsAreFallback = true
		if err := daemon.Run(ctx, o); err != nil {
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

// daemonOptions hands run's flags to the daemon.
func (o runOptions) daemonOptions(env *cliEnv, console io.Writer, logf func(string, ...any)) daemon.Options {
	return daemon.Options{StrataRoot: env.strataRoot, ConfigPath: env.configPath, ControlAddr: o.controlAddr, Port: o.port,
		RestartDelay: o.restartDelay, StartTimeout: o.startTimeout, StopTimeout: o.stopTimeout, Console: console, Logf: logf}
}
