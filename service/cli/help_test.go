package cli

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// --help prints the usage once, on stdout, and exits 0; a bad flag says so
// on stderr and exits 2; every flag the help names exists.
func TestHelpOnceOnStdout(t *testing.T) {
	// Every command of the tree, groups and their subcommands too: a
	// group's help lists its subcommands' usage lines, and each
	// subcommand's own help must then have those flags.
	var runs [][]string
	walkCommands(newRootCmd(&cliEnv{}), func(c *ffcli.Command) {
		if p := cmdPath(c); p != "" {
			runs = append(runs, strings.Fields(p))
		}
	})
	if len(runs) < 15 {
		t.Fatalf("the tree has %d commands: %v", len(runs), runs)
	}
	for _, cmd := range runs {
		name := strings.Join(cmd, " ")
		var out, errb strings.Builder
		code := Main(context.Background(), append(cmd, "--help"), strings.NewReader(""), &out, &errb)
		if code != 0 || errb.Len() != 0 || strings.Count(out.String(), "Usage: ") != 1 {
			t.Fatalf("%s --help: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
		// Every --flag named anywhere in the help is a real flag.
		if len(cmd) == 1 && cmd[0] == "remote" {
			if !strings.Contains(out.String(), "Subcommands:") {
				t.Errorf("remote --help lists no subcommands:\n%s", out.String())
			}
			continue // the group: its subcommands are checked on their own
		}
		for _, f := range strings.Fields(strings.NewReplacer("[", " ", "]", " ", "|", " ", ",", " ", "`", " ", "(", " ", ")", " ", ":", " ").Replace(out.String())) {
			if !strings.HasPrefix(f, "--") || len(f) < 4 {
				continue
			}
			flag := strings.SplitN(strings.TrimPrefix(f, "--"), "=", 2)[0]
			flag = strings.TrimRight(flag, ".;")
			if !strings.Contains(out.String(), "  -"+flag+" ") && !strings.Contains(out.String(), "  -"+flag+"\n") {
				t.Errorf("%s --help names --%s, which is not one of its flags:\n%s", name, flag, out.String())
			}
		}
		out.Reset()
		errb.Reset()
		code = Main(context.Background(), append(cmd, "--no-such-flag"), strings.NewReader(""), &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
	}
}

// The tree lists every command once, in help's order; no arguments is a
// usage mistake (usage on stderr, exit 2); --help on its own is not (stdout,
// exit 0), nor is "help CMD" (CMD's help); an unknown command or
// subcommand is a mistake that names it.
func TestTreeAndTopLevelHelp(t *testing.T) {
	root := newRootCmd(&cliEnv{})
	seen := map[string]int{}
	for _, c := range root.Subcommands {
		seen[c.Name]++
		if seen[c.Name] > 1 {
			t.Errorf("command %q is in the tree twice", c.Name)
		}
	}
	main := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := main()
	if code != 2 || out != "" || strings.Count(errs, "Commands:") != 1 {
		t.Fatalf("no arguments: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, c := range root.Subcommands {
		if !strings.Contains(errs, "  "+c.Name+" ") {
			t.Errorf("the usage does not list %s:\n%s", c.Name, errs)
		}
	}
	for _, help := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		if code, out, errs := main(help...); code != 0 || errs != "" || strings.Count(out, "Commands:") != 1 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", help, code, out, errs)
		}
	}
	if code, out, errs := main("help", "remote", "pair"); code != 0 || errs != "" || !strings.Contains(out, "Usage: strata-service remote pair ") {
		t.Fatalf("help remote pair: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := main("frobnicate"); code != 2 || out != "" || !strings.Contains(errs, `unknown command "frobnicate"`) || !strings.Contains(errs, "Commands:") {
		t.Fatalf("unknown command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := main("remote", "frobnicate"); code != 2 || out != "" || !strings.Contains(errs, `unknown subcommand "frobnicate"`) || !strings.Contains(errs, "Subcommands:") {
		t.Fatalf("unknown subcommand: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := main("remote"); code != 2 || out != "" || !strings.Contains(errs, "Subcommands:") {
		t.Fatalf("remote alone: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, _ := main("--version"); code != 0 || !strings.HasPrefix(out, "strata-service ") {
		t.Fatalf("--version: exit %d, stdout %q", code, out)
	}
}

// Flags may follow arguments, and "--" ends the flags.
func TestInterspersedFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		pos       []string
		host      string
		dryRun    bool
		wantError bool
	}{
		{args: []string{"remote", "--host", "pc2"}, pos: []string{"remote"}, host: "pc2"},
		{args: []string{"--dry-run", "gpu"}, pos: []string{"gpu"}, dryRun: true},
		{args: []string{"gpu", "--dry-run", "x"}, pos: []string{"gpu", "x"}, dryRun: true},
		{args: []string{"gpu", "--", "--dry-run"}, pos: []string{"gpu", "--dry-run"}},
		{args: []string{"--host", "pc2", "--", "a", "--b"}, pos: []string{"a", "--b"}, host: "pc2"},
		{args: []string{"gpu", "-"}, pos: []string{"gpu", "-"}},
		{args: []string{"gpu", "--nope"}, wantError: true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		host := fs.String("host", "", "")
		dry := fs.Bool("dry-run", false, "")
		pos, err := interspersed(fs, tc.args)
		if tc.wantError {
			if err == nil {
				t.Errorf("%q: no error", tc.args)
			}
			continue
		}
		if err != nil || strings.Join(pos, "|") != strings.Join(tc.pos, "|") || *host != tc.host || *dry != tc.dryRun {
			t.Errorf("%q: positional %q host %q dry-run %v (%v), want %q %q %v", tc.args, pos, *host, *dry, err, tc.pos, tc.host, tc.dryRun)
		}
	}
}
