package cli

// `strata-service status [--json]`: the Strata install, the config in use,
// where vision runs and whether the config is valid. collectStrataStatus is
// the fact-gathering half, for the service's own status to build on.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// strataStatus is what `status --json` prints. Adding fields is fine;
// renaming or removing one breaks scripts.
type strataStatus struct {
	Install      *stratainstall.Install `json:"install,omitempty"`
	InstallError string                 `json:"install_error,omitempty"`
	Config       string                 `json:"config,omitempty"`
	ConfigReason string                 `json:"config_reason,omitempty"`
	// Placement is where pictures are read now: the config's encoder, or,
	// when the config names strata-vision-relay, what the settings say
	// (second PC, CPU, off: the relay follows them without a restart).
	Placement settings.Placement `json:"placement,omitempty"`
	// Relay: the config names strata-vision-relay as Strata's encoder.
	Relay     bool     `json:"relay,omitempty"`
	Valid     bool     `json:"valid"`
	Problems  []string `json:"problems,omitempty"`
	Port      int      `json:"port,omitempty"`
	Host      string   `json:"host,omitempty"`
	EngineLog string   `json:"engine_log,omitempty"`
	Backups   []string `json:"backups,omitempty"`
	// Settings is the companion's settings file; SettingsPlacement what it
	// says, which should match Placement.
	Settings          string             `json:"settings"`
	SettingsPlacement settings.Placement `json:"settings_placement,omitempty"`
	SettingsError     string             `json:"settings_error,omitempty"`
	// LastMeasured is the last trial picture measured where pictures are
	// read now (probe --measure, the wizard's Pictures page); nil: none.
	LastMeasured *settings.Measurement `json:"last_measured,omitempty"`
	// Service is the OS service and, when it runs, its state through the
	// control API (cmd_service.go).
	Service *serviceStatus `json:"service,omitempty"`
}

// collectStrataStatus gathers the facts; it never fails, it records what is
// wrong.
func collectStrataStatus(ctx context.Context, env *cliEnv) *strataStatus {
	st := &strataStatus{Settings: locations.SettingsFile()}
	s, err := settings.Load(st.Settings)
	if err != nil {
		st.SettingsError = err.Error()
		s = &settings.Settings{}
	}
	st.SettingsPlacement = s.Vision
	in, err := resolveStrata(ctx, env, s)
	var need *stratainstall.NeedConfigError
	switch {
	case errors.As(err, &need):
		st.Install = need.Install
		st.InstallError = err.Error()
		return st
	case err != nil:
		st.InstallError = err.Error()
		return st
	}
	st.Install, st.Config, st.ConfigReason = in, in.ConfigInUse, in.ConfigReason
	c, err := strataconfig.Read(in.ConfigInUse)
	if err != nil {
		st.Problems = []string{err.Error()}
		return st
	}
	st.Placement, st.Port, st.Host, st.EngineLog = backend.Placement(c, s), c.Port(), c.Host(), c.LogPath()
	st.Relay = c.NamesRelay()
	st.LastMeasured = s.LastMeasured(st.Placement)
	for _, p := range c.Problems {
		st.Problems = append(st.Problems, p.String())
	}
	if in.Python == "" {
		st.Problems = append(st.Problems, "the install has no Python venv (.venv): run Strata's setup in "+in.Root)
	}
	st.Valid = len(st.Problems) == 0
	st.Backups = strataconfig.Backups(in.ConfigInUse)
	return st
}

// statusCmd is `status`.
func statusCmd(env *cliEnv) *ffcli.Command {
	var asJSON bool
	return &ffcli.Command{
		Name:       "status",
		ShortHelp:  "show the Strata install, the config in use, where vision runs, and whether the config is valid",
		ShortUsage: "strata-service status [--json]",
		FlagSet: env.flagSet("status", func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print the status as JSON")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			st := collectStrataStatus(ctx, env)
			st.Service = collectServiceStatus(ctx)
			if asJSON {
				b, _ := json.MarshalIndent(st, "", "  ")
				fmt.Fprintln(env.stdout, string(b))
			} else {
				printStrataStatus(env.stdout, st)
				printServiceStatus(env.stdout, st.Service)
			}
			if !st.Valid {
				return &exitCode{code: 1}
			}
			return nil
		},
	}
}

func printStrataStatus(w io.Writer, st *strataStatus) {
	if st.Install == nil {
		fmt.Fprintf(w, "Strata:     not found\n  %s\n", st.InstallError)
		return
	}
	in := st.Install
	fmt.Fprintf(w, "Strata:     %s\n", in.Root)
	py := in.Python
	if py == "" {
		py = "missing (run Strata's setup)"
	}
	fmt.Fprintf(w, "Python:     %s\n", py)
	if st.Config == "" {
		fmt.Fprintf(w, "Config:     not chosen\n  %s\n", st.InstallError)
		return
	}
	fmt.Fprintf(w, "Config:     %s (%s)\n", st.Config, st.ConfigReason)
	if st.Placement != "" {
		fmt.Fprintf(w, "Vision:     %s\n", placementText(st.Placement))
		if st.Relay {
			fmt.Fprintf(w, "            through strata-vision-relay: moves among the second PC, the CPU and off need no restart\n")
		}
		if m := st.LastMeasured; m != nil {
			fmt.Fprintf(w, "            last measured: %s\n", m.Summary())
		}
		fmt.Fprintf(w, "Address:    http://%s:%d/v1\n", st.Host, st.Port)
	}
	if st.SettingsPlacement != "" && st.Placement != "" && st.SettingsPlacement != st.Placement {
		fmt.Fprintf(w, "Settings:   say vision %s, but the config says %s (the config wins; run `strata-service vision %s` to settle it)\n",
			st.SettingsPlacement, st.Placement, st.Placement)
	}
	if st.SettingsError != "" {
		fmt.Fprintf(w, "Settings:   %s\n", st.SettingsError)
	}
	if st.Valid {
		fmt.Fprintln(w, "Valid:      yes")
	} else {
		fmt.Fprintf(w, "Valid:      no\n  %s\n", strings.Join(st.Problems, "\n  "))
	}
	if len(st.Backups) > 0 {
		fmt.Fprintf(w, "Backups:    %d (newest %s)\n", len(st.Backups), st.Backups[0])
	}
}

func placementText(p settings.Placement) string { return p.Words("") }
