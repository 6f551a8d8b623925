package cli

// `strata-service model` lists the install's configs (one per model) and
// marks the one the service runs; `model use <tag|file>` has the service
// switch to another: it stops Strata, carries the picture placement over
// to the new config (showing the diff), records it in the settings and
// starts Strata with it. Without a running service, `model use` only
// records the choice in the settings (the next start runs it).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/stratainstall"
	"github.com/strata-companion/companion/service/daemon"
)

// modelCmd is `model`: the install's configs, and switching among them.
func modelCmd(env *cliEnv) *ffcli.Command {
	var yes, dryRun bool
	return &ffcli.Command{
		Name:       "model",
		ShortHelp:  "list the install's models (configs), or switch the one Strata runs: model use <tag|file>",
		ShortUsage: "strata-service model [use <tag|file>] [--yes] [--dry-run]",
		LongHelp: `  model             list the install's strata-<tag>.json, the one that runs marked with *
  model use TAG     run strata-TAG.json instead (or name the file); the service stops
                    Strata, carries where pictures are read over to the new config
                    (printing the diff), and starts Strata with it

A switch stops Strata (text requests wait while the new model starts): it
says what first and asks on a terminal (naming a request Strata is
answering); elsewhere it is refused unless --yes is given. If the new model
does not start (its port held by another program, say), the one that ran
before is started again and the command exits 1.`,
		FlagSet: env.flagSet("model", func(fs *flag.FlagSet) {
			yes, dryRun = false, false
			fs.BoolVar(&yes, "yes", false, "switch without asking (also while Strata answers a request)")
			fs.BoolVar(&dryRun, "dry-run", false, "say what the switch would do and change nothing")
		}),
		Exec: func(ctx context.Context, args []string) error {
			switch {
			case len(args) == 0:
				return listModels(ctx, env)
			case args[0] == "use" && len(args) == 2:
				return useModel(ctx, env, args[1], yes, dryRun)
			case args[0] == "use":
				return &exitCode{code: 2, err: errors.New("say which model: model use <tag|file> (see strata-service model)")}
			}
			return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q: use `model` or `model use <tag|file>`", args[0])}
		},
	}
}

// listModels prints the configs: the service's view when it runs, else the
// install found here.
func listModels(ctx context.Context, env *cliEnv) error {
	var l *controlapi.ConfigList
	live := false
	if c := runningService(ctx); c != nil && env.strataRoot == "" && env.configPath == "" {
		live = true
		var err error
		if l, err = c.Configs(ctx); err != nil {
			return fmt.Errorf("the service could not list the configs: %w", err)
		}
	} else {
		s, _, _ := loadSettings()
		opts := stratainstall.Options{Root: env.strataRoot, Settings: s}
		if env.configPath != "" {
			opts.Root = filepath.Dir(env.configPath)
		}
		all, err := stratainstall.Find(ctx, opts)
		if err != nil {
			return err
		}
		if len(all) > 1 {
			return &exitCode{code: 1, err: fmt.Errorf("found %d Strata installs; choose one with --strata-root DIR", len(all))}
		}
		in := &all[0]
		l = &controlapi.ConfigList{StrataRoot: in.Root}
		if s != nil && s.ConfigPath != "" {
			l.Running = s.ConfigPath
		}
		for _, p := range in.Configs {
			e := daemon.Entry(in, p)
			e.Running = l.Running != "" && pathcmp.Same(p, l.Running)
			l.Configs = append(l.Configs, e)
		}
	}
	printModels(env.stdout, l, live)
	return nil
}

// printModels lists l; live: the service's own view (the marked model
// runs now), else the settings' (the marked one runs at the next start).
func printModels(w io.Writer, l *controlapi.ConfigList, live bool) {
	if l.StrataRoot == "" {
		fmt.Fprintln(w, "No Strata install is known to the service: choose one with `strata-service model use --strata-root DIR TAG`, or in the setup.")
		return
	}
	fmt.Fprintf(w, "Strata: %s\n", l.StrataRoot)
	if len(l.Configs) == 0 {
		fmt.Fprintln(w, "  no configs (strata-<tag>.json): run Strata's setup to make one")
		return
	}
	for _, e := range l.Configs {
		mark := " "
		if e.Running {
			mark = "*"
		}
		name := e.ModelName
		if name == "" {
			name = "-"
		}
		ready := "ready"
		if !e.Ready {
			ready = "not ready: " + e.Problem
		}
		fmt.Fprintf(w, "%s %-20s %-28s %s\n", mark, e.Tag, name, ready)
	}
	switch {
	case l.Running != "" && live:
		fmt.Fprintf(w, "* runs now (%s)\n", filepath.Base(l.Running))
	case l.Running != "":
		fmt.Fprintf(w, "* runs when the service starts (%s); the service is not running now\n", filepath.Base(l.Running))
	}
}

// useModel switches the service to another config (or records it when no
// service runs).
func useModel(ctx context.Context, env *cliEnv, config string, yes, dryRun bool) error {
	c := runningService(ctx)
	if c == nil {
		return recordModel(ctx, env, config, dryRun)
	}
	req := controlapi.ConfigRequest{StrataRoot: env.strataRoot, Config: config, Confirm: yes, DryRun: dryRun}
	if !yes && !dryRun {
		// A switch stops Strata: said first, then asked on a terminal,
		// refused elsewhere without --yes.
		dry := req
		dry.DryRun = true
		d, err := switchConfig(ctx, env, c, dry)
		if err != nil {
			return err
		}
		if d.Previous == d.Running {
			fmt.Fprintln(env.stdout, d.Message)
			return nil
		}
		if !isTerminal(env.stdin) {
			why := "switching stops Strata (text requests wait 30-90 s)"
			if d.Busy {
				why = "Strata is answering a request now and switching stops it"
			}
			return &exitCode{code: 2, err: fmt.Errorf("%s; no one is at a terminal to confirm: nothing was changed; run it again with --yes", why)}
		}
		fmt.Fprintln(env.stdout, d.Message)
		fmt.Fprint(env.stderr, "Switch now? Type yes to go on: ")
		var line string
		fmt.Fscanln(env.stdin, &line)
		if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
			return &exitCode{code: 1, err: errors.New("nothing was changed")}
		}
		req.Confirm = true
	}
	resp, err := switchConfig(ctx, env, c, req)
	if err != nil {
		return err
	}
	if resp.Diff != "" {
		fmt.Fprintln(env.stdout, "Where pictures are read, carried over to the new config:")
		fmt.Fprintln(env.stdout, resp.Diff)
	}
	fmt.Fprintln(env.stdout, resp.Message)
	if !dryRun && resp.Previous != resp.Running && !strings.Contains(resp.Message, "it is ready") {
		fmt.Fprintln(env.stdout, "Follow Strata's start with `strata-service status`.")
	}
	return nil
}

// switchConfig asks the service to run another config; while Strata
// answers a request it asks on a terminal (or refuses, exit 2, in a
// script without --yes).
func switchConfig(ctx context.Context, env *cliEnv, c *controlapi.Client, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	resp, err := c.SwitchConfig(ctx, req)
	var se *controlapi.StatusError
	if errors.As(err, &se) && se.Busy && !req.Confirm {
		if !isTerminal(env.stdin) {
			return nil, &exitCode{code: 2, err: errors.New("Strata is answering a request now and switching stops it; no one is at a terminal to confirm: nothing was changed; run it again with --yes")}
		}
		fmt.Fprint(env.stderr, "Strata is answering a request now; switching stops it. Switch anyway? Type yes to go on: ")
		var line string
		fmt.Fscanln(env.stdin, &line)
		if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
			return nil, &exitCode{code: 1, err: errors.New("nothing was changed")}
		}
		req.Confirm = true
		resp, err = c.SwitchConfig(ctx, req)
	}
	if errors.As(err, &se) {
		return nil, &exitCode{code: 1, err: errors.New(se.Message)}
	}
	return resp, err
}

// recordModel, without a service: the settings name the config the next
// start runs.
func recordModel(ctx context.Context, env *cliEnv, config string, dryRun bool) error {
	s, path, err := loadSettings()
	if err != nil {
		return err
	}
	root := env.strataRoot
	if root == "" {
		in, err := resolveStrata(ctx, &cliEnv{}, s)
		var need *stratainstall.NeedConfigError
		switch {
		case errors.As(err, &need):
			root = need.Install.Root
		case err != nil && !strings.ContainsAny(config, `/\`):
			return err
		case err == nil:
			root = in.Root
		}
	}
	target := config
	if !strings.ContainsAny(config, `/\`) && !strings.HasSuffix(config, ".json") {
		target = filepath.Join(root, "strata-"+config+".json")
	}
	in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: root, Config: target})
	if err != nil {
		return err
	}
	if e := daemon.Entry(in, in.ConfigInUse); !e.Ready {
		return &exitCode{code: 1, err: fmt.Errorf("%s cannot run as it is: %s", in.ConfigInUse, e.Problem)}
	}
	if dryRun {
		fmt.Fprintf(env.stdout, "No service runs: the settings would name %s for the next start.\n", in.ConfigInUse)
		return nil
	}
	onLocalOwner()
	b := backend.New(backend.Options{SettingsPath: path})
	if _, err := b.Update(ctx, "the config in use", func(s *settings.Settings) error {
		s.StrataRoot, s.ConfigPath = in.Root, in.ConfigInUse
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "No service runs: the settings (%s) now name %s; the service runs it when it starts.\n", locations.SettingsFile(), in.ConfigInUse)
	return nil
}
