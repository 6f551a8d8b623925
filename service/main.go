// Command strata-service runs the Strata server as an OS service, supervises
// it, serves the control API, and is the companion's command line. Each
// subcommand lives in its own cmd_*.go file and registers itself here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

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

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("strata-service: command registered twice: " + c.name)
	}
	commands[c.name] = c
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runCLI(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runCLI is main without the process: tests call it.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return runCLI(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
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
	fs := flag.NewFlagSet("strata-service "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&env.strataRoot, "strata-root", "", "the Strata install folder (the one holding serve/ and engine/)")
	fs.StringVar(&env.configPath, "config", "", "the Strata config file (strata-<tag>.json) to use")
	if c.setFlags != nil {
		c.setFlags(fs)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\nUsage: %s\n\nFlags:\n", c.summary, c.usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	// The flag package prints the usage itself on --help and on a bad
	// flag; print it once, where it belongs, instead.
	fs.Usage = func() {}
	if err := fs.Parse(reorderFlags(fs, args[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout) // asked for: stdout, exit 0
			return 0
		}
		fmt.Fprintf(stderr, "strata-service %s: %v\n", c.name, err)
		fmt.Fprintf(stderr, "Run \"strata-service %s --help\" for its flags.\n", c.name)
		return 2
	}
	err := c.run(ctx, env, fs.Args())
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
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Every command accepts --strata-root DIR and --config FILE.
Run "strata-service <command> --help" for a command's flags.
`)
}
