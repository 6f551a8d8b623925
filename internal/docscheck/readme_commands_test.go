package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommands is what the README's table of strata-service commands
// lists: each row's first word (its alternatives, "install|uninstall"), and
// for a group ("remote pair|unpair") the subcommands after it.
func readmeCommands(t *testing.T, readme string) (cmds map[string]bool, subs map[string]map[string]bool) {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n`strata-service` commands")
	if !ok {
		t.Fatal("README.md has no table of strata-service commands (a line beginning \"`strata-service` commands\")")
	}
	cmds, subs = map[string]bool{}, map[string]map[string]bool{}
	rows := 0
	for _, l := range strings.Split(after, "\n")[1:] {
		l = strings.TrimSpace(l)
		if l == "" && rows > 0 {
			break // the table's end
		}
		if !strings.HasPrefix(l, "| `") {
			continue // its header, its rule
		}
		rows++
		cell, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
		words := strings.Fields(strings.ReplaceAll(cell, `\|`, "|"))
		names, ok := alternatives(words[0])
		if !ok {
			t.Fatalf("README.md: the row %q names no command", l)
		}
		for _, n := range names {
			cmds[n] = true
			if len(words) > 1 {
				if s, ok := alternatives(strings.Trim(words[1], "[]")); ok {
					if subs[n] == nil {
						subs[n] = map[string]bool{}
					}
					for _, x := range s {
						subs[n][x] = true
					}
				}
			}
		}
	}
	return cmds, subs
}

// Issue 40: the README's table lists every command `strata-service --help`
// lists (and every subcommand of a group such as remote), and each group's
// one-line help, the heading of its --help, names every subcommand: a
// command the program has is never missing from where people look.
func TestTheREADMEListsEveryServiceCommand(t *testing.T) {
	tr := readServiceTree(t)
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, subs := readmeCommands(t, string(raw))
	for _, c := range tr.subs[""] {
		if !cmds[c] {
			t.Errorf("README.md's table of strata-service commands lacks %q (strata-service --help lists it)", c)
			continue
		}
		for _, s := range tr.subs[c] {
			if !subs[c][s] {
				t.Errorf("README.md's row for %q lacks its subcommand %q (strata-service %s --help lists it)", c, s, c)
			}
		}
	}
	for c := range cmds {
		if !tr.isCommand(c) {
			t.Errorf("README.md's table lists %q, which strata-service --help does not", c)
		}
	}
	for c, ss := range tr.subs {
		if c == "" {
			continue
		}
		heading, _, _ := strings.Cut(tr.help[c], "\n")
		for _, s := range ss {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(s) + `($|[^A-Za-z0-9-])`).MatchString(heading) {
				t.Errorf("strata-service %s --help begins %q, which leaves out its subcommand %q", c, heading, s)
			}
		}
	}
}
