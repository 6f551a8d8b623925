package cli

import (
	"context"
	"strings"
	"testing"
)

// --help prints the usage once, on stdout, and exits 0; a bad flag says so
// on stderr and exits 2; every flag the help names exists.
func TestHelpOnceOnStdout(t *testing.T) {
	buildTree()
	var runs [][]string
	for name := range commands {
		runs = append(runs, []string{name})
	}
	// A group's help lists its subcommands' usage lines: each subcommand's
	// own help must then have those flags.
	for sub := range remoteSubcommands {
		runs = append(runs, []string{"remote", sub})
	}
	for _, cmd := range runs {
		name := strings.Join(cmd, " ")
		var out, errb strings.Builder
		code := Main(context.Background(), append(cmd, "--help"), strings.NewReader(""), &out, &errb)
		if code != 0 || errb.Len() != 0 || strings.Count(out.String(), "Usage: ") != 1 {
			t.Fatalf("%s --help: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
		// Every --flag named anywhere in the help is a real flag.
		if cmd[0] == "remote" && len(cmd) == 1 {
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

// The tree lists every command once; no arguments is a usage mistake
// (usage on stderr, exit 2); --help on its own is not (stdout, exit 0).
func TestTreeAndTopLevelHelp(t *testing.T) {
	buildTree()
	seen := map[string]int{}
	for _, n := range order {
		seen[n]++
	}
	if len(seen) != len(commands) || len(order) != len(commands) {
		t.Fatalf("tree order %v, commands %d", order, len(commands))
	}
	var out, errb strings.Builder
	if code := Main(context.Background(), nil, strings.NewReader(""), &out, &errb); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "Commands:") {
		t.Fatalf("no arguments: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := Main(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 || errb.Len() != 0 || strings.Count(out.String(), "Commands:") != 1 {
		t.Fatalf("--help: exit %d, stderr %q", code, errb.String())
	}
}
