package docscheck

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

// relayProse are the words that follow "strata-vision-relay" in a sentence
// about the program rather than a command.
var relayProse = map[string]bool{
	"is": true, "was": true, "as": true, "for": true, "build": true, "binary": true, "program": true,
	"through": true, "started": true, "among": true, "and": true, "or": true, "in": true, "on": true, "of": true,
	"with": true, "runs": true, "reads": true, "answers": true, "that": true, "which": true, "itself": true, "here": true,
	"there": true, "to": true, "from": true, "by": true, "when": true, "says": true,
}

// relayUsageMark is a line of the relay's own usage, which it prints for a
// first argument that is none of its subcommands (it takes it for one of
// Strata's encoder arguments).
const relayUsageMark = "It is not meant to be run by hand"

// relayProgram runs the built strata-vision-relay.
type relayProgram struct {
	t     *testing.T
	bin   string
	usage string
	outs  map[string]string
}

func (r *relayProgram) run(args ...string) string {
	key := strings.Join(args, " ")
	if out, ok := r.outs[key]; ok {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Env = append(cmd.Environ(), "SSH_ORIGINAL_COMMAND=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run() // a subcommand's --help may exit 2: its words are what count
	if ctx.Err() != nil {
		r.t.Fatalf("strata-vision-relay %s did not end within 20 s", key)
	}
	r.outs[key] = out.String()
	return out.String()
}

// check says what is wrong with one mention of strata-vision-relay: a
// subcommand it does not have (it answers with its own usage, taking the
// word for one of Strata's arguments), or a flag that neither the
// subcommand's own answer to --help nor the relay's usage names.
func (r *relayProgram) check(m mention) []string {
	if len(m.words) == 0 {
		return nil
	}
	bad := func(s string) []string { return []string{m.String() + ": " + s} }
	sub := m.words[0]
	var known string // what names the flags that may follow
	switch {
	case flagName(sub) != "":
		known = r.usage // Strata's encoder arguments
	case !wordRE.MatchString(sub):
		return nil // a placeholder
	case relayProse[sub]:
		return nil
	case sub == "version":
		return nil
	default:
		out := r.run(sub, "--help")
		if strings.Contains(out, relayUsageMark) {
			return bad("strata-vision-relay has no subcommand " + sub + " (it took it for an encoder argument and printed its usage)")
		}
		known = out + r.usage
	}
	var problems []string
	for _, w := range m.words {
		name := flagName(w)
		if name == "" || isHelpFlag(name) {
			continue
		}
		if !strings.Contains(known, "-"+name+" ") && !strings.Contains(known, "-"+name+"\n") &&
			!strings.Contains(known, "-"+name+"]") && !strings.Contains(known, "-"+name+"=") {
			problems = append(problems, bad("strata-vision-relay "+sub+" has no flag --"+name)...)
		}
	}
	return problems
}

// Every strata-vision-relay subcommand and flag named in the docs, the
// README and the programs' messages is one the built relay has.
func TestEveryNamedRelayCommandExists(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata-vision-relay")
	}
	root := moduleRoot(t)
	r := &relayProgram{t: t, bin: testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Name: "strata-vision-relay"}), outs: map[string]string{}}
	r.usage = r.run("--help")
	if !strings.Contains(r.usage, relayUsageMark) {
		t.Fatalf("strata-vision-relay --help does not print its usage:\n%s", r.usage)
	}
	// The check itself: a subcommand and a flag that do not exist.
	for _, m := range mentions([]line{
		{"a.md", 1, "`strata-vision-relay agent --encoder FILE --no-such-flag`"},
		{"a.md", 2, "`strata-vision-relay restart`"},
		{"a.md", 3, "the strata-vision-relay binary; `strata-vision-relay probe --file NAME`, `strata-vision-relay --mmproj F`"},
	}, "strata-vision-relay") {
		got := strings.Join(r.check(m), "\n")
		want := map[int]string{1: "has no flag --no-such-flag", 2: "has no subcommand restart", 3: ""}[m.at.n]
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", m, got, want)
		}
	}

	var problems []string
	n := 0
	for _, m := range append(mentions(docLines(t, root), "strata-vision-relay"), mentions(stringLines(t, root), "strata-vision-relay")...) {
		n++
		problems = append(problems, r.check(m)...)
	}
	t.Logf("%d mentions of strata-vision-relay checked", n)
	report(t, "strata-vision-relay commands named that do not exist", problems)
}
