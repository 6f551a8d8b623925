package cli

// `strata-service update-strata [--check] [--yes]`: Strata's own update,
// run by the service (service/daemon/update.go says how): it stops the
// server, pulls Strata and runs its setup unattended, starts it again and
// says which engine ran before and after; a failure puts the old engine
// back. Its lines are printed as the service sends them.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// updateCmd is `update-strata`.
func updateCmd(env *cliEnv) *ffcli.Command {
	var check, yes, dryRun bool
	return &ffcli.Command{
		Name:       "update-strata",
		ShortHelp:  "update Strata itself (git pull and its setup), with the service stopping and starting it; --check only says whether one exists",
		ShortUsage: "strata-service update-strata [--check | --dry-run] [--yes]",
		LongHelp: `Says whether an update of Strata exists (the install's git origin, else
Strata's releases). Then the service stops the Strata server, runs
Strata's own update unattended (a fast-forward git pull, then its
setup.py's update), starts Strata again and waits until it is ready, and
says which engine ran before and after. If the update fails (a step
stopped, the engine was kept because it was in use, or Strata did not get
ready), the old engine is put back (its setup.py's engine rollback) and
started, and the command exits 1 saying what failed.

It asks first on a terminal; elsewhere --yes is needed. Needs the service.`,
		FlagSet: env.flagSet("update-strata", func(fs *flag.FlagSet) {
			check, yes, dryRun = false, false, false
			fs.BoolVar(&check, "check", false, "only say whether an update exists")
			fs.BoolVar(&dryRun, "dry-run", false, "say what the update would do and change nothing")
			fs.BoolVar(&yes, "yes", false, "update without asking (also while Strata answers a request)")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			ow := openOwner(ctx)
			r, err := ow.UpdateStrata(ctx, controlapi.UpdateRequest{Check: true})
			if err != nil {
				return ownerError(err) // the in-process owner: no service runs the update
			}
			c, ok := ow.(*controlapi.Client) // only the service updates
			if !ok {
				return &exitCode{code: 1, err: errors.New("the update goes through the Strata Companion service: start it (strata-service start)")}
			}
			fmt.Fprintln(env.stdout, r.Message)
			if dryRun && r.Available && !check {
				fmt.Fprintln(env.stdout, "The update would stop Strata (text stops for a few minutes), pull its files and run its setup's update, then start it again; a failed one puts the old engine back.")
				if r.Busy {
					fmt.Fprintln(env.stdout, "Strata is answering a request now: the update would cut it.")
				}
				fmt.Fprintln(env.stdout, "Dry run: nothing was changed.")
				return nil
			}
			if check || !r.Available {
				if r.Offline {
					return &exitCode{code: 1}
				}
				return nil
			}
			if !yes {
				busy := ""
				if r.Busy {
					busy = "Strata is answering a request now, which the update cuts; "
				}
				if !isTerminal(env.stdin) {
					return &exitCode{code: 2, err: errors.New(busy + "updating stops Strata for a few minutes and no one is at a terminal to confirm it: nothing was changed; run it again with --yes")}
				}
				fmt.Fprint(env.stderr, busy+"Stop Strata and update it now (text stops for a few minutes)? Type yes to go on: ")
				var line string
				fmt.Fscanln(env.stdin, &line)
				if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
					return &exitCode{code: 1, err: errors.New("nothing was changed")}
				}
			}
			// Print the service's lines as they come.
			st, err := c.State(ctx)
			if err != nil {
				return ownerError(err)
			}
			fctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			since := st.Seq
			print := func(evs *controlapi.EventsResponse) {
				since = evs.Next
				for _, e := range evs.Events {
					if e.Kind == events.UpdateProgress {
						fmt.Fprintln(env.stdout, "  "+e.Message)
					}
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for fctx.Err() == nil {
					evs, err := c.Events(fctx, since, 5*time.Second)
					if err != nil {
						return
					}
					print(evs)
				}
			}()
			r, err = c.UpdateStrata(ctx, controlapi.UpdateRequest{Confirm: true})
			stop()
			wg.Wait()
			// Every line was published before the answer: read what is left.
			if evs, err := c.Events(ctx, since, 0); err == nil {
				print(evs)
			}
			if err != nil {
				return ownerError(err)
			}
			fmt.Fprintln(env.stdout, r.Message)
			if !r.Updated {
				return &exitCode{code: 1}
			}
			return nil
		},
	}
}

// ownerError is the owner's refusal in its words (exit 1): the one way
// every command says it (controlapi.Words).
func ownerError(err error) error {
	return &exitCode{code: 1, err: controlapi.Words(err)}
}
