package cli

// `strata-service install | uninstall | start | stop`: the OS service, through
// github.com/kardianos/service (Windows services, systemd, SysV, launchd).
// What kardianos cannot say is added here: the systemd unit's memlock and
// restart policy (our own unit template), and on Windows the recovery ladder
// (cmd_service_windows.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	kservice "github.com/kardianos/service"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

const (
	serviceName        = "strata-companion"
	serviceDisplayName = "Strata Companion"
	serviceDescription = "Runs the Strata LLM server, restarts it when it stops, and serves the local control API for the Strata tray and setup."
	// systemStateHome is where a Linux service that runs as a user other
	// than root keeps the companion's files (never that user's home).
	systemStateHome = "/var/lib/strata-companion"
)

// installOptions are install's flags.
type installOptions struct {
	user string
}

// systemdUnit is the unit kardianos writes on systemd (its template syntax:
// see kardianos/service's docs). Differences from kardianos' own: Strata
// locks its expert cache into RAM, so memlock is unlimited; the service is
// restarted only on failure (a stop is a stop); KillMode=mixed lets
// strata-service stop Strata's process group itself (SIGTERM, then the tree)
// before systemd kills what is left; TimeoutStopSec leaves room for Strata's
// own 10 s encoder shutdown and our 30 s kill timeout.
const systemdUnit = `[Unit]
Description={{Description}}
ConditionFileIsExecutable={{Path | cmdEscape}}
After=network-online.target
Wants=network-online.target
StartLimitIntervalSec=600
StartLimitBurst=5
{{range Dependencies}}{{.}}
{{end}}
[Service]
Type=simple
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
{{if WorkingDirectory}}WorkingDirectory={{WorkingDirectory | cmdEscape}}
{{end}}{{if UserName}}User={{UserName}}
{{end}}{{range EnvVars}}{{.}}
{{end}}LimitMEMLOCK=infinity
Restart=on-failure
RestartSec=5
KillMode=mixed
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
`

// recordChoice writes the install and config to run into the settings the
// service will read (those of its account: the machine's, or
// systemStateHome's for --user).
func recordChoice(ctx context.Context, env *cliEnv, user string) error {
	if user != "" {
		old, had := os.LookupEnv(locations.EnvHome)
		os.Setenv(locations.EnvHome, systemStateHome)
		defer func() {
			if had {
				os.Setenv(locations.EnvHome, old)
			} else {
				os.Unsetenv(locations.EnvHome)
			}
		}()
	}
	s, _, _ := loadSettings()
	in, err := resolveStrata(ctx, env, s)
	if err != nil {
		fmt.Fprintf(env.stderr, "strata-service install: %v\nThe service will look for Strata each time it starts; choose it in the setup, or with `strata-service model use --strata-root DIR TAG` once it runs.\n", err)
		return nil
	}
	b := backend.New(backend.Options{SettingsPath: locations.SettingsFile()})
	if _, err := b.Update(ctx, "the config in use", func(s *settings.Settings) error {
		s.StrataRoot, s.ConfigPath = in.Root, in.ConfigInUse
		return nil
	}); err != nil {
		return fmt.Errorf("recording the Strata install in the settings: %w", err)
	}
	fmt.Fprintf(env.stdout, "The service will run %s with %s (recorded in %s).\n", in.Root, in.ConfigInUse, locations.SettingsFile())
	sayServerAccount(env, in.Root, user)
	return nil
}

// serviceConfig is the service's definition. o is nil when only the name
// matters (start, stop, run).
func serviceConfig(o *installOptions, extraArgs ...string) *kservice.Config {
	c := &kservice.Config{
		Name:        serviceName,
		DisplayName: serviceDisplayName,
		Description: serviceDescription,
		Arguments:   append([]string{"run"}, extraArgs...),
		// Never the installing user's home: the service runs as another
		// account and must not depend on it.
		WorkingDirectory: serviceWorkDir(),
		Option: kservice.KeyValue{
			"SystemdScript": systemdUnit,
			// launchd: start at boot and again if it dies.
			"RunAtLoad": true,
			"KeepAlive": true,
			// Windows: start at boot; kardianos sets one recovery action,
			// the ladder is set after install (setRecovery).
			"StartType":              "automatic",
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "5s",
		},
	}
	if o != nil && o.user != "" {
		c.UserName = o.user
		// Another account than root: keep the companion's files in one
		// machine-wide folder, not in that account's home.
		c.EnvVars = map[string]string{locations.EnvHome: systemStateHome}
	}
	return c
}

func newService(o *installOptions, extraArgs ...string) (kservice.Service, error) {
	s, err := kservice.New(&program{}, serviceConfig(o, extraArgs...))
	if err != nil {
		return nil, fmt.Errorf("this system has no service manager strata-service knows (%v); run `strata-service run` from your own start-up script instead", err)
	}
	return s, nil
}

var errNotAdmin = errors.New("this needs an administrator: run it from an elevated prompt (Windows: Run as administrator) or with sudo (Linux, macOS)")

// installed says whether the service is installed, and its status. Some
// managers answer a missing service with an error of their own (SysV's
// `service x status` fails), so only a clear answer counts as installed; a
// unit systemd holds in its failed state is installed too.
func installed(s kservice.Service) (bool, kservice.Status) {
	st, err := s.Status()
	switch {
	case err == nil:
		return st == kservice.StatusRunning || st == kservice.StatusStopped, st
	case strings.Contains(err.Error(), "failed state"):
		return true, kservice.StatusStopped
	}
	return false, st
}

// installedService is what uninstall, start and stop need first: an
// administrator, and the service installed (with its status).
func installedService() (kservice.Service, kservice.Status, error) {
	if !isAdmin() {
		return nil, 0, errNotAdmin
	}
	s, err := newService(nil)
	if err != nil {
		return nil, 0, err
	}
	ok, st := installed(s)
	if !ok {
		return nil, 0, errNotInstalled
	}
	return s, st, nil
}

var errNotInstalled = errors.New("the Strata Companion service is not installed; install it with `strata-service install` (as an administrator)")

// serviceCmds are the OS service's commands: install, uninstall, start, stop.
func serviceCmds(env *cliEnv) []*ffcli.Command {
	var io installOptions
	var cmds []*ffcli.Command
	cmds = append(cmds, &ffcli.Command{
		Name:       "install",
		ShortHelp:  "install strata-service as an OS service that starts with the computer (administrator/root)",
		ShortUsage: "strata-service install [--strata-root DIR] [--config FILE] [--user NAME]",
		FlagSet: env.flagSet("install", func(fs *flag.FlagSet) {
			io = installOptions{}
			fs.StringVar(&io.user, "user", "", "Linux/macOS: the account the service runs as (default root; its files then live in "+systemStateHome+")")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			if !isAdmin() {
				return errNotAdmin
			}
			s, err := newService(&io)
			if err != nil {
				return err
			}
			if ok, st := installed(s); ok {
				return fmt.Errorf("the Strata Companion service is already installed (%s); run `strata-service uninstall` first to install it again", statusWord(st))
			}
			if err := prepareServiceUser(io.user); err != nil {
				return err
			}
			if err := s.Install(); err != nil {
				if strings.Contains(err.Error(), "already exists") {
					return fmt.Errorf("the Strata Companion service is already installed (%v); run `strata-service uninstall` first", err)
				}
				return fmt.Errorf("installing the service: %w", err)
			}
			if err := setRecovery(); err != nil {
				fmt.Fprintf(env.stderr, "strata-service install: the service is installed, but its restart-on-failure ladder could not be set: %v\n", err)
			}
			// The settings say which config the service runs (a model
			// switch changes them): install records the one given, else
			// the one found now (as `status` finds it), and bakes nothing
			// into the service's command line.
			if err := recordChoice(ctx, env, io.user); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "Installed the %s service (%s). Start it with `strata-service start`.\n", serviceName, kservice.ChosenSystem())
			return nil
		},
	})
	cmds = append(cmds, &ffcli.Command{
		Name:       "uninstall",
		FlagSet:    env.flagSet("uninstall", nil),
		ShortHelp:  "stop and remove the OS service (administrator/root)",
		ShortUsage: "strata-service uninstall",
		Exec: func(ctx context.Context, args []string) error {
			s, st, err := installedService()
			if err != nil {
				return err
			}
			if st == kservice.StatusRunning {
				if err := s.Stop(); err != nil {
					fmt.Fprintf(env.stderr, "strata-service uninstall: stopping the service first: %v\n", err)
				}
			}
			if err := s.Uninstall(); err != nil {
				return fmt.Errorf("removing the service: %w", err)
			}
			fmt.Fprintf(env.stdout, "Removed the %s service. Strata itself and its files are untouched.\n", serviceName)
			return nil
		},
	})
	for _, a := range []struct{ name, summary, done string }{
		{"start", "start the OS service (administrator/root)", "Started"},
		{"stop", "stop the OS service and the Strata server with it (administrator/root)", "Stopped"},
	} {
		a := a
		cmds = append(cmds, &ffcli.Command{
			Name:       a.name,
			FlagSet:    env.flagSet(a.name, nil),
			ShortHelp:  a.summary,
			ShortUsage: "strata-service " + a.name,
			Exec: func(ctx context.Context, args []string) error {
				s, st, err := installedService()
				if err != nil {
					return err
				}
				if a.name == "start" && st == kservice.StatusRunning {
					fmt.Fprintln(env.stdout, "The service is already running.")
					return nil
				}
				if a.name == "stop" && st == kservice.StatusStopped {
					fmt.Fprintln(env.stdout, "The service is already stopped.")
					return nil
				}
				if err := kservice.Control(s, a.name); err != nil {
					return fmt.Errorf("%s the service: %w", map[string]string{"start": "starting", "stop": "stopping"}[a.name], err)
				}
				fmt.Fprintf(env.stdout, "%s the %s service.\n", a.done, serviceName)
				return nil
			},
		})
	}
	return cmds
}

func statusWord(st kservice.Status) string {
	switch st {
	case kservice.StatusRunning:
		return "running"
	case kservice.StatusStopped:
		return "stopped"
	}
	return "state unknown"
}

// serviceStatus is the service part of `status --json`.
type serviceStatus struct {
	// Installed and Manager come from the service manager (systemd, SysV,
	// launchd, Windows); Running from it or from a control API answer.
	Installed bool   `json:"installed"`
	Running   bool   `json:"running"`
	Manager   string `json:"manager,omitempty"`
	// State is the running service's own state (nil when it does not answer).
	State *controlapi.State `json:"state,omitempty"`
	Error string            `json:"error,omitempty"`
}

// collectServiceStatus asks the service manager and, when the service
// answers, the control API.
func collectServiceStatus(ctx context.Context) *serviceStatus {
	ss := &serviceStatus{}
	if s, err := newService(nil); err == nil {
		ss.Manager = kservice.ChosenSystem().String()
		ok, st := installed(s)
		ss.Installed, ss.Running = ok, st == kservice.StatusRunning
	}
	c, err := controlapi.NewClient()
	if err != nil {
		if !errors.Is(err, controlapi.ErrNotRunning) {
			ss.Error = err.Error()
		}
		return ss
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.State(cctx)
	if err != nil {
		if !errors.Is(err, controlapi.ErrNotRunning) {
			ss.Error = err.Error()
		}
		return ss
	}
	ss.Running, ss.State = true, st
	return ss
}

// managerWords names a service manager for people: "systemd", "launchd",
// "Windows services" (kardianos' names: linux-systemd, darwin-launchd,
// windows-service, unix-systemv, ...).
func managerWords(m string) string {
	switch {
	case strings.HasSuffix(m, "-systemd"):
		return "systemd"
	case strings.HasSuffix(m, "-launchd"):
		return "launchd"
	case strings.HasPrefix(m, "windows"):
		return "Windows services"
	case strings.HasSuffix(m, "-systemv"):
		return "System V init"
	case strings.HasSuffix(m, "-openrc"):
		return "OpenRC"
	case strings.HasSuffix(m, "-upstart"):
		return "Upstart"
	}
	return m
}

func printServiceStatus(w interface{ Write([]byte) (int, error) }, ss *serviceStatus) {
	svc := "not installed"
	if ss.Installed {
		svc = "installed, stopped"
		if ss.Running {
			svc = "installed, running"
		}
	} else if ss.Running {
		svc = "running (not as an OS service: `strata-service run`)"
	}
	// Which manager runs it matters only for a service it runs (which
	// tool starts and stops it); for none it is noise.
	if m := managerWords(ss.Manager); ss.Installed && m != "" {
		svc += " (" + m + ")"
	}
	fmt.Fprintf(w, "Service:    %s\n", svc)
	if ss.Error != "" {
		fmt.Fprintf(w, "  %s\n", ss.Error)
	}
	st := ss.State
	if st == nil {
		return
	}
	srv := st.Server
	line := srv.Phase
	if srv.URL != "" {
		line += " at " + srv.URL
	}
	if srv.Version != "" {
		line += " (Strata " + srv.Version + ")"
	}
	if !srv.Since.IsZero() {
		line += fmt.Sprintf(" for %s", time.Since(srv.Since).Round(time.Second))
	}
	fmt.Fprintf(w, "Server:     %s\n", line)
	if srv.Detail != "" && srv.Detail != srv.LastError {
		fmt.Fprintf(w, "  %s\n", srv.Detail)
	}
	if srv.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", srv.LastError)
	}
	if f := srv.Foreign; f != nil {
		fmt.Fprintf(w, "Port:       %d is held by a program the service did not start", f.Port)
		if f.PID > 0 {
			fmt.Fprintf(w, ": process %d (%s)", f.PID, f.Cmdline)
		}
		fmt.Fprintln(w, "; the service starts Strata once it ends")
	}
	if len(st.Config.Rewritten) > 0 {
		fmt.Fprintf(w, "Config:     rewritten by someone else (Strata's setup?):\n")
		for _, f := range st.Config.Rewritten {
			fmt.Fprintf(w, "  - %s\n", f)
		}
		fmt.Fprintln(w, "  put the companion's placement back: strata-service vision repair")
	}
	if srv.Model != "" {
		fmt.Fprintf(w, "Model:      %s (context %d tokens)\n", srv.Model, srv.Context)
	}
	if srv.Experts > 0 {
		fmt.Fprintf(w, "Experts:    %d cached, %.2f GiB of VRAM\n", srv.Experts, srv.ExpertCacheGiB)
	}
	if srv.Restarts > 0 {
		fmt.Fprintf(w, "Restarts:   %d after crashes\n", srv.Restarts)
	}
	if srv.LogDropped > 0 || srv.LogProblem != "" {
		fmt.Fprintf(w, "Log:        %d server output lines not written\n", srv.LogDropped)
		if srv.LogProblem != "" {
			fmt.Fprintf(w, "  %s\n", srv.LogProblem)
		}
	}
	if st.Vision.Placement != "" {
		// The words of the one table (controlapi.EncoderStates), as the
		// tray says them.
		enc := st.EncoderText(func(t time.Time) string { return t.Local().Format(time.TimeOnly) })
		if st.Vision.Encoder != controlapi.EncoderFailed && st.Vision.Error != "" {
			enc += ": " + st.Vision.Error
		}
		fmt.Fprintf(w, "Encoder:    %s\n", enc)
		if where := VisionWhere(st.Vision); where != "" && st.Vision.Placement != "off" && st.Vision.EncoderHoldsVRAM() {
			fmt.Fprintf(w, "Pictures:   %s\n", where)
		}
	}
	if r := st.Remote; r != nil {
		if r.Reachable {
			fmt.Fprintf(w, "Second PC:  %s reachable\n", r.Host)
		} else {
			fmt.Fprintf(w, "Second PC:  %s unreachable: %s\n", r.Host, r.Reason)
		}
	}
}

// VisionWhere says where pictures are really read, from the encoder's own
// start line: "second PC gpu-laptop: NVIDIA GeForce RTX 3060 Laptop GPU
// (1383 MiB of VRAM), 1.6 s per picture".
func VisionWhere(v controlapi.VisionState) string {
	if v.Device == "" {
		return ""
	}
	s := "this PC"
	if v.Host != "" {
		s = "second PC " + v.Host
	}
	switch {
	case v.Device == "gpu" && v.GPU != "":
		s += ": " + v.GPU
		if v.VRAMMiB > 0 {
			s += fmt.Sprintf(" (%d MiB of VRAM)", v.VRAMMiB)
		}
	case v.Device == "gpu":
		s += ": its GPU"
	default:
		s += ": its CPU"
	}
	if v.LastPictureMS > 0 {
		s += fmt.Sprintf(", %.1f s per picture", float64(v.LastPictureMS)/1000)
	}
	return s
}
