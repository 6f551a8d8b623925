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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/fserr"
	"github.com/strata-companion/companion/internal/locations"
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
	// StrataRoot and ConfigPath: --strata-root / --config ("" = from the settings).
	StrataRoot, ConfigPath string
	// ControlAddr is where the control API listens (loopback; port 0 picks one).
	ControlAddr string
	// Port is the Strata server's port (0: the config's, else 8080).
	Port                                    int
	RestartDelay, StartTimeout, StopTimeout time.Duration
	// Console receives the server's output in a terminal (nil as a service).
	Console io.Writer
	// Logf is the service's own log.
	Logf func(format string, a ...any)
}

// noInstall answers server actions when no Strata install could be used.
type noInstall struct{ err error }

func (n noInstall) Start(context.Context) error   { return n.err }
func (n noInstall) Stop(context.Context) error    { return nil }
func (n noInstall) Restart(context.Context) error { return n.err }

// Run is the service: it returns when ctx ends (after stopping Strata).
// The caller holds the instance lock (LockInstance).
func Run(ctx context.Context, o Options) error {
	console, logf := o.Console, o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bus := events.NewBus(2000)
	initial := controlapi.State{Service: controlapi.ServiceInfo{Version: version.Version, Started: time.Now(), PID: os.Getpid()}}
	s, err := settings.LoadDefault()
	if err != nil {
		logf("%v", err)
		s = &settings.Settings{}
	}
	in, resolveErr := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: o.StrataRoot, Config: o.ConfigPath, Settings: s})
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
		owner = newBackend(in, publish)
	}
	tracker.OnEvent = func(e events.Event) {
		switch e.Kind {
		case events.ServerProgress, events.ExpertCache:
			if console != nil {
				return // the console already shows the server's own lines
			}
		}
		logf("%s: %s", e.Kind, eventWords(e))
	}

	var sup *supervisor.Supervisor
	var ctl controlserver.Control
	var relayAcct *account.Account
	if resolveErr != nil {
		ctl = noInstall{fmt.Errorf("no Strata install to run: %v", resolveErr)}
		tracker.Publish(events.Event{Kind: events.ServerFailed, Message: resolveErr.Error(), Details: map[string]any{"reason": "install"}})
	} else {
		if _, err := locations.EnsureDir(locations.LogDir); err != nil {
			logf("cannot create the log folder: %v", fserr.Explain(err, locations.Path(locations.LogDir)))
		}
		first := o.RestartDelay
		sup, err = supervisor.New(supervisor.Config{
			StrataRoot:   in.Root,
			ConfigPath:   in.ConfigInUse,
			PIDFile:      filepath.Join(locations.Path(locations.StateDir), "strata-server.pid"),
			Port:         o.Port,
			Python:       in.Python,
			LogFile:      locations.ServerLogFile(),
			Console:      console,
			Events:       tracker,
			Logf:         logf,
			StartTimeout: o.StartTimeout,
			StopTimeout:  o.StopTimeout,
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

	// settingsOwner is the owner, or one for the settings alone when no
	// install was found (settings need none).
	settingsOwner := func() *backend.Backend {
		if owner == nil {
			return newBackend(nil, publish)
		}
		return owner
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
			if _, err := settingsOwner().PatchSettings(rctx, p); err != nil {
				return nil, httpError(err)
			}
			st := tracker.Snapshot()
			return &st, nil
		},
		Relay: func(rctx context.Context, r controlapi.RelayReport) error {
			if err := settingsOwner().RelayReport(rctx, r); err != nil {
				return httpError(err)
			}
			tracker.SetNEmbd(r.NEmbd)
			return nil
		},
		Remote: func(rctx context.Context, rec *controlapi.RemoteRecord) (*settings.Remote, error) {
			if rec == nil {
				return settingsOwner().Paired(rctx)
			}
			rm, err := settingsOwner().RecordRemote(rctx, *rec)
			if err == nil && relayAcct != nil {
				grantKey(relayAcct, logf) // a key made by this pairing
			}
			return rm, httpError(err)
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
	l, err := controlserver.Listen(o.ControlAddr)
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
	// that runs Strata's server (the relay is its child).
	var installOwner *account.Account
	if resolveErr == nil {
		if a, err := account.OwnerOf(in.Root); err == nil && !a.Privileged {
			installOwner = a
		}
		if a, err := account.ServerAccount(in.Root, sup.Python()); err == nil && a != nil {
			relayAcct = a
			grantKey(a, logf)
		}
	}
	files := controlserver.Files{Addr: locations.ControlAddrFile(), Read: locations.ControlTokenFile(),
		Operator: locations.ControlOperatorTokenFile(), Relay: locations.RelayTokenFile()}
	if err := srv.Publish(files, addr, installOwner, relayAcct); err != nil {
		l.Close()
		return fmt.Errorf("publishing the control API address: %w", fserr.Explain(err, locations.Path(locations.StateDir)))
	}
	defer srv.Unpublish(files, addr)
	logf("control API on http://%s (read token in %s; changes only with %s, readable by %s)", addr, files.Read, files.Operator, installOwner)

	var wg sync.WaitGroup
	if sup != nil {
		wg.Add(1)
		go func() { defer wg.Done(); sup.Run(ctx) }()
	}
	err = srv.Serve(ctx, l)
	wg.Wait()
	return err
}

// eventWords is an event's message for the service's log; the relay's
// events often carry only details (where, ms, host), written as k=v.
func eventWords(e events.Event) string {
	if e.Message != "" || len(e.Details) == 0 {
		return events.OneLine(e.Message)
	}
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, events.OneLine(fmt.Sprintf("%s=%v", k, e.Details[k])))
	}
	return strings.Join(parts, " ")
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
func newBackend(in *stratainstall.Install, publish func(events.Event)) *backend.Backend {
	o := backend.Options{SettingsPath: locations.SettingsFile(), Publish: publish, VRAMTotalMiB: ServerVRAM}
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
