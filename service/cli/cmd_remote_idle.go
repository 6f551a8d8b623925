package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/settings"
)

// `strata-service remote idle-stop <seconds>|off`: how long the second PC's
// encoder may sit without a picture before the relay stops it (giving that
// PC its VRAM back). With the service running the change goes through its
// control API (POST /v1/settings), so the service stays the one writer of
// the settings; with no service this process hosts the same backend, under
// the same cross-process lock.
func remoteIdleStopCmd(env *cliEnv) *ffcli.Command {
	return &ffcli.Command{
		Name:       "idle-stop",
		FlagSet:    env.flagSet("remote idle-stop", nil),
		ShortHelp:  "stop the second PC's encoder after this long without a picture (off: keep it running)",
		ShortUsage: "strata-service remote idle-stop <seconds>|<duration like 10m>|off",
		Exec: func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return &exitCode{code: 2, err: errors.New("usage: strata-service remote idle-stop <seconds>|off (e.g. 600, 10m, off)")}
			}
			secs, err := settings.ParseIdleStop(args[0])
			if err != nil {
				return &exitCode{code: 2, err: err}
			}
			how, err := setIdleStop(ctx, secs)
			if err != nil {
				return err
			}
			if secs == 0 {
				fmt.Fprintf(env.stdout, "The second PC's encoder now keeps running between pictures (%s).\n", how)
			} else {
				fmt.Fprintf(env.stdout, "The second PC's encoder now stops after %s without a picture (%s).\n", settings.FormatIdleStop(secs), how)
			}
			return nil
		},
	}
}

// setIdleStop changes the setting through its owner (the running service,
// else the backend in this process); it says which.
func setIdleStop(ctx context.Context, secs int) (string, error) {
	p := controlapi.SettingsPatch{IdleStopS: &secs}
	ow := openOwner(ctx)
	if _, err := ow.PatchSettings(ctx, p); err != nil {
		return "", controlapi.Words(err)
	}
	if owner.IsService(ow) {
		return "set through the running service", nil
	}
	return "saved in " + locations.SettingsFile() + "; the relay uses it from its next connection to the second PC, at the latest when Strata restarts", nil
}
