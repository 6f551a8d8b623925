package cli

import (
	"context"
	"fmt"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// `strata-service unload`: the running Strata unloads its model now,
// giving the GPU's memory back (a game, another program) while the server
// keeps answering; the next request loads the model again, as after
// Strata's own idle unload. It goes through the owner (POST
// /v1/server/unload); with no service there is nothing running to unload.
func unloadCmd(env *cliEnv) *ffcli.Command {
	return &ffcli.Command{
		Name:       "unload",
		FlagSet:    env.flagSet("unload", nil),
		ShortHelp:  "give the GPU's memory back now: Strata unloads its model and loads it again on the next request",
		ShortUsage: "strata-service unload",
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			if err := openOwner(ctx).Unload(ctx); err != nil {
				return ownerError(err)
			}
			fmt.Fprintln(env.stdout, "Strata unloaded its model and gave its memory back; the next request loads it again (text waits for that load once).")
			return nil
		},
	}
}
