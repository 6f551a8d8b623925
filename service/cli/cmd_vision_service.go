package cli

// `vision` through the running service: when strata-service runs, the
// change goes through POST /v1/vision, so the service is the one writer of
// the config and the settings and restarts Strata itself; otherwise
// cmd_vision.go hosts the same backend in this process.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// visionThroughService sends the change to the running service. handled is
// false when no service answers (then the caller hosts the backend).
func visionThroughService(ctx context.Context, env *cliEnv, ow controlapi.Owner, req controlapi.VisionRequest, o visionOptions) (handled bool, err error) {
	c, ok := ow.(*controlapi.Client)
	if !ok {
		return false, nil // no service: the caller hosts the owner for the config the flags name
	}
	st, err := c.State(ctx)
	if err != nil {
		return false, nil // it stopped a moment ago
	}
	// Another install or config than the service runs (or a service with
	// none yet): the service switches to it first, the same path a model
	// switch takes, and the change is then made to that file only.
	// An unset flag matches whatever the service runs; a set one must name the same path.
	if (env.configPath != "" && !pathcmp.Same(env.configPath, st.Config.Path)) || (env.strataRoot != "" && !pathcmp.Same(env.strataRoot, st.Config.StrataRoot)) || st.Config.Path == "" {
		if req.DryRun {
			return false, nil // previewed on that file by this process; nothing is written
		}
		if env.configPath == "" && env.strataRoot == "" {
			return true, &exitCode{code: 1, err: errors.New("the service runs no Strata install yet: name it with --strata-root DIR (and --config FILE)")}
		}
		target := env.configPath
		if target == "" {
			in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot})
			if err != nil {
				return true, &exitCode{code: 1, err: err}
			}
			target = in.ConfigInUse
		}
		sw, err := switchConfig(ctx, env, c, controlapi.ConfigRequest{StrataRoot: env.strataRoot, Config: target, IfRunning: st.Config.Path, Confirm: o.yes})
		if err != nil {
			return true, err
		}
		fmt.Fprintln(env.stdout, sw.Message)
		o.yes = true // the switch restarted Strata already; the change follows at once
		st.Config.Path = target
	}
	req.Config = st.Config.Path
	if o.relay != "" {
		return true, &exitCode{code: 2, err: errors.New("--relay works only while no service runs (the service uses the relay installed beside it): drop --relay, or stop the service first")}
	}
	// Say what the change means (restart or not) before it is made.
	dry := req
	dry.DryRun = true
	resp, err := c.SetVision(ctx, dry)
	if err == nil && !req.DryRun {
		printVision(env, resp.Diff, resp.Notes, resp.Message, false)
		if resp.RestartNeeded && !o.yes {
			if err := confirmRestart(env); err != nil {
				return true, err
			}
		}
		resp, err = c.SetVision(ctx, req)
	}
	if err != nil {
		return true, ownerError(err)
	}
	switch {
	case req.DryRun:
		printVision(env, resp.Diff, resp.Notes, resp.Message, true)
	case resp.Written:
		fmt.Fprintf(env.stdout, "The service saved the config (the old one is in %s).\n", resp.Backup)
		if resp.Restarted {
			fmt.Fprintln(env.stdout, "The service is restarting the Strata server; follow it with `strata-service status`.")
		}
	}
	return true, nil
}

// confirmRestart asks on a terminal whether to go on with a change that
// restarts Strata; elsewhere it refuses (exit 2): a script that changes
// vision must say --yes to interrupt text generation.
func confirmRestart(env *cliEnv) error {
	if !isTerminal(env.stdin) {
		return &exitCode{code: 2, err: errors.New("this change restarts Strata (text stops for a while) and no one is at a terminal to confirm it: nothing was changed; run it again with --yes")}
	}
	fmt.Fprint(env.stderr, "Restart Strata now? Type yes to go on: ")
	line, _ := bufio.NewReader(env.stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
		return &exitCode{code: 1, err: errors.New("nothing was changed")}
	}
	return nil
}
