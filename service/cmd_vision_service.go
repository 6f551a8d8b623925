package main

// `vision` through the running service: when strata-service runs, the
// change goes through POST /v1/vision, so the service is the one writer of
// the config and restarts Strata itself; otherwise cmd_vision.go edits the
// files directly.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/strata-companion/companion/internal/controlapi"
)

// visionThroughService sends the change to the running service. handled is
// false when no service answers (then the caller works on the files).
func visionThroughService(ctx context.Context, env *cliEnv, what string, o visionOptions) (handled bool, err error) {
	if what == "restore" || o.relay != "" || o.vramMiB != 0 || o.noProbe {
		return false, nil // not in the API: work on the files
	}
	c, err := controlapi.NewClient()
	if err != nil {
		return false, nil
	}
	st, err := c.State(ctx)
	if err != nil {
		return false, nil // a stale address file: the service is not running
	}
	// Another install or config than the service's: work on the files.
	if !samePath(env.configPath, st.Config.Path) || !samePath(env.strataRoot, st.Config.StrataRoot) {
		return false, nil
	}
	req := controlapi.VisionRequest{Placement: what, Threads: o.threads, DryRun: o.dryRun}
	if o.device != "" {
		d, _ := strconv.Atoi(o.device)
		req.Device = &d
	}
	if what == "remote" {
		req.Host = o.host
		if req.Host == "" {
			if s, _, err := loadSettings(); err == nil && s.Remote != nil {
				req.Host = s.Remote.Host
				if s.Remote.User != "" {
					req.Host = s.Remote.User + "@" + req.Host
				}
				if s.Remote.Port != 0 {
					req.Host += ":" + strconv.Itoa(s.Remote.Port)
				}
			}
		}
		if req.Host == "" {
			return true, &exitCode{code: 2, err: errors.New("say which PC reads the pictures: vision remote --host [user@]host[:port]")}
		}
	}
	resp, err := c.SetVision(ctx, req)
	if err != nil {
		var se *controlapi.StatusError
		if errors.As(err, &se) && se.Code == 400 {
			return true, errors.New(se.Message)
		}
		return true, fmt.Errorf("the service could not change vision: %w", err)
	}
	if resp.Diff == "" {
		fmt.Fprintf(env.stdout, "The config already has vision %s: nothing to change.\n", describePlacement(what))
		return true, nil
	}
	fmt.Fprint(env.stdout, resp.Diff)
	switch {
	case o.dryRun:
		fmt.Fprintln(env.stdout, "Dry run: nothing was written.")
	case resp.Written:
		fmt.Fprintf(env.stdout, "The service saved the config (the old one is in %s).\n", resp.Backup)
		if resp.Restarted {
			fmt.Fprintln(env.stdout, "The service is restarting the Strata server; follow it with `strata-service status`.")
		} else {
			fmt.Fprintln(env.stdout, restartHint)
		}
	}
	return true, nil
}

// samePath: an unset flag matches anything; a set one must name the same file.
func samePath(flag, service string) bool {
	if flag == "" {
		return true
	}
	a, err1 := filepath.Abs(flag)
	b, err2 := filepath.Abs(service)
	return err1 == nil && err2 == nil && filepath.Clean(a) == filepath.Clean(b)
}

func init() {
	// A change made on the files (restore, or flags the API does not take)
	// still needs a restart: ask the running service for one.
	afterVisionChange = func(ctx context.Context, env *cliEnv, configPath string) (string, error) {
		c, err := controlapi.NewClient()
		if err != nil {
			return restartHint, nil
		}
		st, err := c.State(ctx)
		if err != nil || !samePath(configPath, st.Config.Path) {
			return restartHint, nil
		}
		if err := c.Server(ctx, "restart"); err != nil {
			return "", fmt.Errorf("the config was changed, but the service could not restart Strata: %w", err)
		}
		return "The service is restarting the Strata server; follow it with `strata-service status`.", nil
	}
}
