package docscheck

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-companion/companion/service/cli"
)

// serviceProse are the words that follow "strata-service" in a sentence about
// the program rather than a command ("strata-service is the OS service").
// None of them is a command; a command that is not one of these and not in
// the tree is reported.
var serviceProse = map[string]bool{
	"is": true, "was": true, "will": true, "runs": true, "ran": true, "did": true, "does": true, "knows": true,
	"calls": true, "itself": true, "program": true, "binary": true, "service": true, "with": true, "as": true,
	"and": true, "or": true, "through": true, "in": true, "in-process": true, "for": true, "by": true, "on": true,
	"of": true, "to": true, "from": true, "at": true, "then": true, "that": true, "which": true, "has": true,
	"can": true, "must": true, "alone": true, "here": true, "there": true, "when": true, "shows": true, "says": true,
	"prints": true, "tells": true, "lists": true, "reports": true, "writes": true, "reads": true, "starts": true, "stops": true,
}

// serviceTree is strata-service's command tree as its own --help tells it
// (cli.Main, the program's entry point, in this process): each command's
// path ("remote pair") and its help text.
type serviceTree struct {
	help map[string]string // "" is the program's own help
	subs map[string][]string
}

func readServiceTree(t *testing.T) *serviceTree {
	t.Helper()
	tr := &serviceTree{help: map[string]string{}, subs: map[string][]string{}}
	var visit func(path []string)
	visit = func(path []string) {
		p := strings.Join(path, " ")
		var out, errb strings.Builder
		code := cli.Main(context.Background(), append(append([]string{}, path...), "--help"), strings.NewReader(""), &out, &errb)
		if code != 0 {
			t.Fatalf("strata-service %s --help: exit %d\n%s%s", p, code, out.String(), errb.String())
		}
		tr.help[p] = out.String()
		section := "Subcommands:"
		if len(path) == 0 {
			section = "Commands:"
		}
		for _, name := range listed(out.String(), section) {
			tr.subs[p] = append(tr.subs[p], name)
			visit(append(append([]string{}, path...), name))
		}
	}
	visit(nil)
	if len(tr.subs[""]) < 10 {
		t.Fatalf("strata-service --help lists %d commands: %v", len(tr.subs[""]), tr.subs[""])
	}
	return tr
}

// listed is the names a help text lists under section (two spaces, the
// name, a space), up to the next blank line.
func listed(help, section string) []string {
	_, after, ok := strings.Cut(help, "\n"+section+"\n")
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(after, "\n\n")
	var names []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") {
			if f := strings.Fields(l); len(f) > 0 {
				names = append(names, f[0])
			}
		}
	}
	return names
}

func (tr *serviceTree) isCommand(path string) bool { _, ok := tr.help[path]; return ok }

// hasFlag: the command's help lists -name among its flags.
func (tr *serviceTree) hasFlag(path, name string) bool {
	h := tr.help[path]
	return strings.Contains(h, "\n  -"+name+" ") || strings.Contains(h, "\n  -"+name+"\n")
}

// mentionsWord: the command's help (its usage line and text) has w as a
// word, as an argument it takes ("vision remote", "model use").
func (tr *serviceTree) mentionsWord(path, w string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(w) + `($|[^A-Za-z0-9-])`).MatchString(tr.help[path])
}

// check says what is wrong with one mention of strata-service: a command
// or subcommand that is not in the tree, an argument its help does not
// name, a flag it does not have.
func (tr *serviceTree) check(m mention) []string {
	words := m.words
	if len(words) == 0 {
		return nil
	}
	bad := func(format string, args ...any) []string {
		return []string{m.String() + ": " + fmt.Sprintf(format, args...)}
	}
	if name := flagName(words[0]); name != "" {
		if isHelpFlag(name) || name == "version" {
			return nil
		}
		return bad("strata-service has no flag --%s before a command (the commands: %s)", name, strings.Join(tr.subs[""], ", "))
	}
	cmds, ok := alternatives(words[0])
	if !ok {
		return nil // a placeholder (<command>, %s): nothing named
	}
	if len(cmds) == 1 && !tr.isCommand(cmds[0]) && serviceProse[cmds[0]] {
		return nil // a sentence about the program
	}
	var problems []string
	for _, c := range cmds {
		if c == "help" || c == "version" {
			continue // the program answers both itself (cli.Main)
		}
		if !tr.isCommand(c) {
			problems = append(problems, bad("strata-service has no command %q (the commands: %s)", c, strings.Join(tr.subs[""], ", "))...)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	rest := words[1:]
	paths := cmds
	// A group's next word is its subcommand; a command's next word, when it
	// is not a flag, an argument its help must name.
	if len(rest) > 0 && flagName(rest[0]) == "" {
		if args, ok := alternatives(rest[0]); ok {
			var next []string
			for _, c := range cmds {
				for _, a := range args {
					switch {
					case len(tr.subs[c]) > 0 && tr.isCommand(c+" "+a):
						next = append(next, c+" "+a)
					case len(tr.subs[c]) > 0 && len(args) == 1 && serviceProse[a]:
						next = append(next, c)
					case len(tr.subs[c]) > 0:
						problems = append(problems, bad("strata-service %s has no subcommand %q (its subcommands: %s)", c, a, strings.Join(tr.subs[c], ", "))...)
					case !tr.mentionsWord(c, a) && !(len(args) == 1 && serviceProse[a]):
						problems = append(problems, bad("strata-service %s takes no argument %q (its help does not name it)", c, a)...)
						next = append(next, c)
					default:
						next = append(next, c)
					}
				}
			}
			paths = next
			rest = rest[1:]
		}
	}
	for _, w := range rest {
		name := flagName(w)
		if name == "" || isHelpFlag(name) {
			continue // a value or a placeholder
		}
		for _, p := range paths {
			if !tr.hasFlag(p, name) {
				problems = append(problems, bad("strata-service %s has no flag --%s", p, name)...)
			}
		}
	}
	return problems
}

// Every strata-service command, subcommand, argument and flag named in the
// docs, the README and the programs' own messages is one the program has:
// a reader who types what they read gets that command, not "unknown
// command".
func TestEveryNamedServiceCommandExists(t *testing.T) {
	root := moduleRoot(t)
	tr := readServiceTree(t)
	var problems []string
	n := 0
	for _, m := range append(mentions(docLines(t, root), "strata-service"), mentions(stringLines(t, root), "strata-service")...) {
		n++
		problems = append(problems, tr.check(m)...)
	}
	// The README's table of commands names them without the program.
	for _, m := range readmeCommandTable(t, root) {
		n++
		problems = append(problems, tr.check(m)...)
	}
	t.Logf("%d mentions of strata-service checked against %d commands", n, len(tr.help)-1)
	report(t, "strata-service commands named that do not exist", problems)
}

// readmeCommandTable reads the README's table of strata-service commands:
// each row's first cell is a command without the program's name.
func readmeCommandTable(t *testing.T, root string) []mention {
	t.Helper()
	var out []mention
	in := false
	for _, l := range docLines(t, root) {
		if l.file != "README.md" {
			continue
		}
		switch {
		case strings.Contains(l.text, "`strata-service` commands"):
			in = true
		case in && strings.HasPrefix(l.text, "| `"):
			cell := strings.TrimPrefix(l.text, "| ")
			cell = strings.ReplaceAll(cell, `\|`, "|")
			cell, _, _ = strings.Cut(cell[1:], "`")
			out = append(out, mention{at: l, prog: "strata-service", words: commandWords(cell)})
		case in && strings.HasPrefix(l.text, "#"):
			in = false
		}
	}
	if len(out) < 5 {
		t.Fatalf("README.md's table of strata-service commands has %d rows", len(out))
	}
	return out
}

// The check itself: a command, a subcommand, an argument or a flag that
// does not exist is reported with where it was read; prose is not.
func TestServiceCheckFindsWhatIsWrong(t *testing.T) {
	tr := readServiceTree(t)
	lines := []line{
		{"a.md", 1, "restart Strata from the tray or with `strata-service restart`"},
		{"a.md", 2, "run `strata-service remote repair` first"},
		{"a.md", 3, "`strata-service vision sideways --dry-run`"},
		{"a.md", 4, "`strata-service status --jsn`"},
		{"a.md", 5, "`strata-service remote unpair pc2 --forse`"},
		{"ok.md", 1, "strata-service is the OS service; `strata-service vision remote --host pc2 --dry-run` moves it"},
		{"ok.md", 2, "`strata-service remote pair [user@]host[:port]`, then (strata-service remote prepare)."},
		{"ok.md", 3, "| `strata-service settings [--fallback-cpu on|off] [--idle-stop-s N]` | ... |"},
		{"ok.md", 4, "Run \"strata-service %s --help\" for its flags; strata-service --help; `strata-service install|uninstall|start|stop`"},
		{"ok.md", 5, "`strata-service model use <tag>`, `strata-service update-strata --check`"},
	}
	var got []string
	for _, m := range mentions(lines, "strata-service") {
		got = append(got, tr.check(m)...)
	}
	want := []string{
		`a.md:1: ` + "`strata-service restart`" + `: strata-service has no command "restart"`,
		`a.md:2: ` + "`strata-service remote repair`" + `: strata-service remote has no subcommand "repair"`,
		`a.md:3: ` + "`strata-service vision sideways --dry-run`" + `: strata-service vision takes no argument "sideways"`,
		`a.md:4: ` + "`strata-service status --jsn`" + `: strata-service status has no flag --jsn`,
		`a.md:5: ` + "`strata-service remote unpair pc2 --forse`" + `: strata-service remote unpair has no flag --forse`,
	}
	if len(got) != len(want) {
		t.Fatalf("found %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
}

// quotedCommand is a command line in backticks inside a message
// ("--host is for `vision remote`").
var quotedCommand = regexp.MustCompile("`([a-z][^`]*)`")

// The service's own messages also name its commands without the program's
// name, in backticks ("--host is for `vision remote`", "use `model use
// <tag|file>`"): each such command, its subcommand and flags exist too. A
// backticked word that is no command (a flag's value placeholder, `port`)
// is not a mention.
func TestServiceMessagesNameRealCommands(t *testing.T) {
	root := moduleRoot(t)
	tr := readServiceTree(t)
	var problems []string
	n := 0
	for _, l := range stringLines(t, root) {
		if !strings.HasPrefix(l.file, "service/") {
			continue
		}
		for _, m := range quotedCommand.FindAllStringSubmatch(l.text, -1) {
			words := commandWords(m[1])
			if len(words) == 0 || !tr.isCommand(words[0]) {
				continue
			}
			n++
			problems = append(problems, tr.check(mention{at: l, prog: "strata-service", words: words})...)
		}
	}
	if n == 0 {
		t.Fatal("found no backticked command in the service's messages: the check reads nothing")
	}
	t.Logf("%d backticked commands in the service's messages checked", n)
	report(t, "commands the service's messages name that do not exist", problems)
}
