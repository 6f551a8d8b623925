// Package cli is strata-service's command line: an ffcli command tree
// (newRootCmd, below), one *ffcli.Command per command, each made by its
// cmd_*.go file; a command's Exec returns an *exitCode for its own exit code
// (a usage mistake is 2), any other error is exit 1. Main runs it; the
// program's package main (service/main.go) only wires the process to it.
// The daemon is service/daemon, the owner of state internal/backend.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/version"
)

// common holds the flags every command accepts.
type common struct {
	strataRoot string
	configPath string
}

// cliEnv is what a command gets: its common flags and where to write. One
// is made per Main call, with the tree that closes over it.
type cliEnv struct {
	common
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader

	// usage collects what the flag package writes when a command's flags
	// are parsed (its usage, on -h or a mistake); usageOf is the command it
	// was written for. Main prints the usage on stdout for --help and only
	// the mistake, on stderr, otherwise.
	usage   strings.Builder
	usageOf *ffcli.Command
	// ran is the command whose Exec ran (for the error's prefix).
	ran *ffcli.Command
}

// flagSet is a command's flag set: the common flags, then the command's
// own (add may be nil). It prints nothing itself (see cliEnv.usage).
func (env *cliEnv) flagSet(path string, add func(fs *flag.FlagSet)) *flag.FlagSet {
	fs := flag.NewFlagSet("strata-service "+path, flag.ContinueOnError)
	fs.SetOutput(&env.usage)
	fs.StringVar(&env.strataRoot, "strata-root", "", "the Strata install folder (the one holding serve/ and engine/)")
	fs.StringVar(&env.configPath, "config", "", "the Strata config file (strata-<tag>.json) to use")
	if add != nil {
		add(fs)
	}
	return fs
}

// exitCode is an error that carries its own exit code (e.g. `status` on a
// stopped service).
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitCode) Unwrap() error { return e.err }

// StopSignals end the program cleanly (Strata stopped, the control files
// removed): Ctrl-C, the service manager's SIGTERM, and SIGHUP (the terminal
// of a foreground `run` closed). SIGHUP is a stop, not a reload: the config
// is re-read at every start of the server anyway.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// newRootCmd is the command tree, in the order help lists it: one
// *ffcli.Command per command, made by its cmd_*.go file; `remote` is a group
// whose subcommands are commands of their own (cmd_remote*.go). ffcli
// parses each level's flags and picks the subcommand by name; a fresh tree
// per Main call keeps every flag's value to that call.
func newRootCmd(env *cliEnv) *ffcli.Command {
	var cmds []*ffcli.Command
	cmds = append(cmds, runCmd(env))
	cmds = append(cmds, serviceCmds(env)...)
	cmds = append(cmds, statusCmd(env), modelCmd(env), unloadCmd(env), updateCmd(env), visionCmd(env), settingsCmd(env), probeCmd(env), setupCmd(env), remoteCmd(env), lendCmd(env))
	root := &ffcli.Command{
		Name:        "strata-service",
		ShortUsage:  "strata-service <command> [flags]",
		ShortHelp:   "runs the Strata LLM server as an OS service and manages it.",
		FlagSet:     flag.NewFlagSet("strata-service", flag.ContinueOnError),
		Subcommands: cmds,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q", args[0])}
			}
			return usageError{}
		},
	}
	root.FlagSet.SetOutput(&env.usage)
	walkCommands(root, func(c *ffcli.Command) {
		c.UsageFunc = func(c *ffcli.Command) string { env.usageOf = c; return usageText(c) }
		if c.Exec == nil {
			return
		}
		exec := c.Exec
		c.Exec = func(ctx context.Context, args []string) error {
			env.ran = c
			if len(c.Subcommands) > 0 {
				return exec(ctx, args) // a group: its arguments are subcommands
			}
			// Flags may follow the arguments ("vision remote --host pc2").
			pos, err := interspersed(c.FlagSet, args)
			if err != nil {
				return err
			}
			return exec(ctx, pos)
		}
	})
	return root
}

// walkCommands calls f for c and every command below it.
func walkCommands(c *ffcli.Command, f func(*ffcli.Command)) {
	f(c)
	for _, sub := range c.Subcommands {
		walkCommands(sub, f)
	}
}

// cmdPath is a command's name as typed after strata-service ("remote pair").
func cmdPath(c *ffcli.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(c.FlagSet.Name(), "strata-service"), " ")
}

// usageError is a mistake in how a command was called: exit 2, with the
// command's usage on stderr.
type usageError struct{ err error }

func (e usageError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e usageError) Unwrap() error { return e.err }

// interspersed parses the flags that follow a leaf command's first
// argument (ffcli, like the flag package, stops at the first one): each
// non-flag argument is kept and parsing resumes after it, until "--".
func interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return append(pos, args[1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			args = args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil // Parse ended at "--"
		}
		args = rest
	}
	return pos, nil
}

// Main runs the command line for args (without the program name) and
// returns the exit code; main and tests call it. The CLI is an ffcli
// command tree (github.com/peterbourgon/ff/v3/ffcli; see docs/service.md
// for why): usage printed once, on stdout for --help (exit 0), on stderr
// for a mistake (exit 2); 1 for a failure; a command's own code otherwise.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && (args[0] == "--version" || args[0] == "version"):
		fmt.Fprintln(stdout, "strata-service", version.Version)
		return 0
	case len(args) > 0 && args[0] == "help":
		// "help" alone is --help; "help remote pair" is "remote pair --help".
		args = append(append([]string{}, args[1:]...), "--help")
	}
	env := &cliEnv{stdout: stdout, stderr: stderr, stdin: stdin}
	root := newRootCmd(env)
	err := root.Parse(args)
	if err == nil {
		err = root.Run(ctx)
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText(env.usageOf))
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		// A group's own mistake: unknown or missing (sub)command.
		c := env.ran
		prefix := "strata-service"
		if c != root {
			prefix += " " + cmdPath(c)
		}
		if ue.err != nil {
			if c == root {
				fmt.Fprintf(stderr, "%s: %v\n\n", prefix, ue.err)
			} else {
				fmt.Fprintf(stderr, "%s: %v\n", prefix, ue.err)
			}
		}
		fmt.Fprint(stderr, usageText(c))
		return 2
	}
	if env.ran == nil || env.usageOf != nil {
		// A flag the command does not have, or a bad value: the flag
		// package said so while ffcli parsed (env.usageOf is that command).
		c := env.usageOf
		if c == nil {
			c = root
		}
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // ff's "error parsing commandline arguments: " adds nothing
		}
		if c == root {
			fmt.Fprintf(stderr, "strata-service: %v\n\n%s", err, usageText(root))
			return 2
		}
		fmt.Fprintf(stderr, "strata-service %s: %v\nRun \"strata-service %s --help\" for its flags.\n", cmdPath(c), err, cmdPath(c))
		return 2
	}
	prefix := "strata-service " + cmdPath(env.ran)
	var ec *exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(stderr, prefix+": "+ec.err.Error())
		}
		return ec.code
	}
	fmt.Fprintln(stderr, prefix+": "+err.Error())
	return 1
}

// usageText is a command's help: for the program, its commands; for a
// group, its subcommands with their usage lines (and its own flags, for a
// group that is a command too, like lend); for a command, its usage
// line, its LongHelp and its flags.
func usageText(c *ffcli.Command) string {
	var b strings.Builder
	switch {
	case c.Name == "strata-service":
		fmt.Fprintf(&b, "strata-service %s: %s\n\nUsage: %s\n\nCommands:\n", version.Version, c.ShortHelp, c.ShortUsage)
		width := 10
		for _, sub := range c.Subcommands {
			width = max(width, len(sub.Name))
		}
		for _, sub := range c.Subcommands {
			fmt.Fprintf(&b, "  %-*s %s\n", width, sub.Name, sub.ShortHelp)
		}
		fmt.Fprint(&b, "\nEvery command accepts --strata-root DIR and --config FILE.\nRun \"strata-service <command> --help\" for a command's flags.\n")
	case len(c.Subcommands) > 0:
		fmt.Fprintf(&b, "%s\n\nUsage: %s\n\nSubcommands:\n", c.ShortHelp, c.ShortUsage)
		for _, sub := range c.Subcommands {
			fmt.Fprintf(&b, "  %-9s %s\n            %s\n", sub.Name, sub.ShortHelp, sub.ShortUsage)
		}
		fmt.Fprintf(&b, "\nA subcommand's flags: strata-service %s <subcommand> -h\n", cmdPath(c))
		if own := ownFlags(c.FlagSet); own != "" {
			fmt.Fprintf(&b, "\nFlags of %s itself:\n%s", cmdPath(c), own)
		}
	default:
		fmt.Fprintf(&b, "%s\n\nUsage: %s\n", c.ShortHelp, c.ShortUsage)
		if c.LongHelp != "" {
			fmt.Fprintf(&b, "\n%s\n", c.LongHelp)
		}
		fmt.Fprint(&b, "\nFlags:\n")
		out := c.FlagSet.Output()
		c.FlagSet.SetOutput(&b)
		c.FlagSet.PrintDefaults()
		c.FlagSet.SetOutput(out)
	}
	return b.String()
}

// ownFlags are the flags of fs other than the common ones, as PrintDefaults
// shows them ("" when it has none).
func ownFlags(fs *flag.FlagSet) string {
	var b strings.Builder
	probe := flag.NewFlagSet("", flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "strata-root" && f.Name != "config" {
			probe.Var(f.Value, f.Name, f.Usage)
		}
	})
	n := 0
	probe.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return ""
	}
	probe.SetOutput(&b)
	probe.PrintDefaults()
	return b.String()
}
