// Package cli is strata-service's command line: an explicit ffcli command
// tree (tree, below), one command per cmd_*.go file. Main runs it; the
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
	"sync"
	"syscall"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/version"
)

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // "strata-service name [flags] args"; flags are printed after it
	// setFlags adds the command's own flags (the common ones are added for it).
	setFlags func(fs *flag.FlagSet)
	// run does the work. It returns a userError for problems the user can fix.
	run func(ctx context.Context, env *cliEnv, args []string) error
}

// common holds the flags every command accepts.
type common struct {
	strataRoot string
	configPath string
}

// cliEnv is what a command gets: its common flags and where to write.
type cliEnv struct {
	common
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
}

var commands = map[string]*command{}

// order is the help order: the order commands were registered in (tree's).
var order []string

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("strata-service: command registered twice: " + c.name)
	}
	commands[c.name] = c
	order = append(order, c.name)
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

// tree is the command tree, explicit and in the order help lists it. Each
// entry adds its commands (register); remote adds its subcommands from
// remoteTree (cmd_remote.go).
var tree = []func(){registerRun, registerServiceCommands, registerStatus, registerModel, registerUpdate, registerVision, registerSettings, registerProbe, registerSetup, registerRemote}

// buildTree registers the tree once (Main and printUsage call it).
var buildTree = sync.OnceFunc(func() {
	for _, add := range tree {
		add()
	}
})

// Main runs the command line for args (without the program name) and
// returns the exit code; main and tests call it. The CLI is an ffcli
// command tree (github.com/peterbourgon/ff/v3/ffcli; see docs/service.md
// for why): usage printed once, on stdout for --help (exit 0), on stderr
// for a mistake (exit 2); 1 for a failure; a command's own code otherwise.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	buildTree()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return Main(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		if len(args) == 0 {
			printUsage(stderr)
			return 2
		}
		printUsage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "strata-service", version.Version)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "strata-service: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	env := &cliEnv{stdout: stdout, stderr: stderr, stdin: stdin}
	var runErr error
	root := &ffcli.Command{Name: "strata-service", FlagSet: quietFlagSet("strata-service")}
	for _, name := range order {
		cmd := commands[name]
		fs := quietFlagSet("strata-service " + cmd.name)
		if cmd == c {
			fs.StringVar(&env.strataRoot, "strata-root", "", "the Strata install folder (the one holding serve/ and engine/)")
			fs.StringVar(&env.configPath, "config", "", "the Strata config file (strata-<tag>.json) to use")
			if cmd.setFlags != nil {
				cmd.setFlags(fs)
			}
		}
		root.Subcommands = append(root.Subcommands, &ffcli.Command{
			Name: cmd.name, ShortUsage: cmd.usage, ShortHelp: cmd.summary, FlagSet: fs,
			Exec: func(ctx context.Context, rest []string) error { runErr = cmd.run(ctx, env, rest); return nil },
		})
	}
	var sub *ffcli.Command
	for _, s := range root.Subcommands {
		if s.Name == c.name {
			sub = s
		}
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\nUsage: %s\n\nFlags:\n", c.summary, c.usage)
		sub.FlagSet.SetOutput(w)
		sub.FlagSet.PrintDefaults()
		sub.FlagSet.SetOutput(io.Discard)
	}
	// Flags may follow the arguments ("vision remote --host pc2").
	argv := append([]string{c.name}, reorderFlags(sub.FlagSet, args[1:])...)
	if err := root.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // ff's "error parsing commandline arguments: " adds nothing
		}
		fmt.Fprintf(stderr, "strata-service %s: %v\nRun \"strata-service %s --help\" for its flags.\n", c.name, err, c.name)
		return 2
	}
	if err := root.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "strata-service "+c.name+": "+err.Error())
		return 1
	}
	err := runErr
	var ec *exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(stderr, "strata-service "+c.name+": "+ec.err.Error())
		}
		return ec.code
	}
	if err != nil {
		fmt.Fprintln(stderr, "strata-service "+c.name+": "+err.Error())
		return 1
	}
	return 0
}

// quietFlagSet reports errors instead of printing them (Main prints
// once, where they belong).
func quietFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// reorderFlags lets flags follow positional arguments
// ("vision remote --host pc2" and "vision --dry-run gpu" both work).
func reorderFlags(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `strata-service %s: runs the Strata LLM server as an OS service and manages it.

Usage: strata-service <command> [flags]

Commands:
`, version.Version)
	buildTree()
	for _, n := range order {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Every command accepts --strata-root DIR and --config FILE.
Run "strata-service <command> --help" for a command's flags.
`)
}
