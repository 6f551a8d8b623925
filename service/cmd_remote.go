package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// remoteSubcommands is filled by init() functions (pair, unpair here; prepare in cmd_remote_prepare.go).
var remoteSubcommands = map[string]remoteSubcommand{}

// remoteSubcommand is one "strata-service remote <name>" action. setFlags
// adds its own flags to the remote command's flag set (all subcommands share
// one set, so flag names must not clash); run gets the positional arguments
// after the subcommand's name.
type remoteSubcommand struct {
	summary  string
	setFlags func(fs *flag.FlagSet)
	run      func(ctx context.Context, env *cliEnv, args []string) error
}

func init() {
	register(&command{
		name:    "remote",
		summary: "pair, unpair or prepare the second PC that reads pictures",
		usage:   "strata-service remote <" + "pair|unpair|prepare" + "> [user@]host[:port] [flags]",
		// The command's flag set is parsed before the subcommand is known, so
		// it accepts every subcommand's flags (a name two subcommands share is
		// added once); runRemote then hands the ones given to the chosen
		// subcommand's own flag set, which rejects flags that are not its.
		setFlags: func(fs *flag.FlagSet) {
			remoteFlags = fs
			for _, name := range remoteNames() {
				sc := remoteSubcommands[name]
				if sc.setFlags == nil {
					continue
				}
				tmp := flag.NewFlagSet(name, flag.ContinueOnError)
				sc.setFlags(tmp)
				tmp.VisitAll(func(f *flag.Flag) {
					if fs.Lookup(f.Name) == nil {
						fs.Var(f.Value, f.Name, f.Usage+" ("+name+")")
					}
				})
			}
		},
		run: runRemote,
	})
}

func remoteNames() []string {
	names := make([]string, 0, len(remoteSubcommands))
	for n := range remoteSubcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printRemoteUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: strata-service remote <subcommand> [user@]host[:port] [flags]")
	fmt.Fprintln(w, "\nSubcommands:")
	for _, n := range remoteNames() {
		fmt.Fprintf(w, "  %-8s %s\n", n, remoteSubcommands[n].summary)
	}
}

func runRemote(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		printRemoteUsage(env.stderr)
		return &exitCode{code: 2}
	}
	sc, ok := remoteSubcommands[args[0]]
	if !ok {
		printRemoteUsage(env.stderr)
		return &exitCode{code: 2, err: fmt.Errorf("unknown subcommand %q (one of: %s)", args[0], strings.Join(remoteNames(), ", "))}
	}
	// Re-apply the flags given to the chosen subcommand's own set.
	sub := flag.NewFlagSet("strata-service remote "+args[0], flag.ContinueOnError)
	sub.SetOutput(io.Discard)
	if sc.setFlags != nil {
		sc.setFlags(sub)
	}
	var given []*flag.Flag
	if remoteFlags != nil {
		remoteFlags.Visit(func(f *flag.Flag) { given = append(given, f) })
	}
	for _, f := range given {
		if f.Name == "strata-root" || f.Name == "config" {
			continue
		}
		if sub.Lookup(f.Name) == nil {
			return &exitCode{code: 2, err: fmt.Errorf("--%s does not apply to \"remote %s\"", f.Name, args[0])}
		}
		if err := sub.Set(f.Name, f.Value.String()); err != nil {
			return &exitCode{code: 2, err: fmt.Errorf("--%s: %v", f.Name, err)}
		}
	}
	return sc.run(ctx, env, args[1:])
}

// remoteFlags is the remote command's parsed flag set (set by setFlags, which
// runCLI calls once per invocation before run).
var remoteFlags *flag.FlagSet
