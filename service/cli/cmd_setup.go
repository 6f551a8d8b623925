package cli

import (
	"context"
	"errors"
	"flag"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/service/termsetup"
)

// setup --cli: the terminal wizard is service/termsetup; this file has the
// flags and the adapters.

var setupFlags struct {
	cli        bool
	yes        bool
	page       string
	acceptHost string
}

// setupDeps builds the adapters; tests replace it with stand-ins.
var setupDeps = func(env *cliEnv, confirm setupflow.ConfirmHostKey) setupflow.Deps {
	self, _ := os.Executable() // this program is strata-service
	return live.Deps(live.Options{StrataRoot: env.strataRoot, ConfigPath: env.configPath, ServiceExe: self, Confirm: confirm})
}

// setupCmd is `setup --cli`.
func setupCmd(env *cliEnv) *ffcli.Command {
	return &ffcli.Command{
		Name:       "setup",
		ShortHelp:  "the first-run setup (--cli for a terminal)",
		ShortUsage: "strata-service setup --cli [--yes] [--page NAME] [--accept-host-key SHA256:...]",
		FlagSet: env.flagSet("setup", func(fs *flag.FlagSet) {
			fs.BoolVar(&setupFlags.cli, "cli", false, "run the setup in this terminal (the window is strata-setup)")
			fs.BoolVar(&setupFlags.yes, "yes", false, "take the default answer wherever it is safe (never trusts a new host key)")
			fs.StringVar(&setupFlags.page, "page", "", "start at this page: welcome, strata, this-pc, placement, remote")
			fs.StringVar(&setupFlags.acceptHost, "accept-host-key", "", "trust the second PC's host key if its fingerprint is this (SHA256:...)")
		}),
		Exec: func(ctx context.Context, args []string) error { return runSetup(ctx, env, args) },
	}
}

func runSetup(ctx context.Context, env *cliEnv, args []string) error {
	if !setupFlags.cli {
		return errors.New("the windowed setup is strata-setup; for this terminal run \"strata-service setup --cli\"")
	}
	return termsetup.Run(ctx, func(confirm setupflow.ConfirmHostKey) setupflow.Deps { return setupDeps(env, confirm) },
		termsetup.Options{In: env.stdin, Out: env.stdout, Yes: setupFlags.yes, AcceptHostKey: setupFlags.acceptHost, Page: setupFlags.page})
}
