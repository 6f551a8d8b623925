package docscheck

import (
	"regexp"
	"strings"
)

// A mention is a program named with what follows it on the line: the words
// a reader would type ("remote", "pair", "--force"), cleaned of Markdown and
// punctuation, up to where the command ends (a closing backtick or quote, a
// bracket, the end of a sentence, a shell operator).
type mention struct {
	at    line
	prog  string
	words []string
}

func (m mention) String() string {
	return m.at.String() + ": `" + strings.TrimSpace(m.prog+" "+strings.Join(m.words, " ")) + "`"
}

// mentions finds every place prog is named in lines. A name glued to more
// (strata-service.exe, strata-service's, strata-service-foo) is another word.
func mentions(lines []line, prog string) []mention {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_./\\-])` + regexp.QuoteMeta(prog) + `[ \t]`)
	var out []mention
	for _, l := range lines {
		text := strings.ReplaceAll(l.text, `\|`, "|") // a | inside a Markdown table
		for _, loc := range re.FindAllStringIndex(text, -1) {
			out = append(out, mention{at: l, prog: prog, words: commandWords(text[loc[1]:])})
		}
	}
	return out
}

// commandWords are the words of a command line up to where it ends.
func commandWords(rest string) []string {
	var words []string
	for _, raw := range strings.Fields(rest) {
		switch raw {
		case "|", "||", "&&", ";", ">", ">>", "<", "2>&1", "#", "/", "-", "—", "=":
			return words
		}
		w, end := raw, false
		if i := strings.IndexAny(w, "`\"();"); i >= 0 {
			w, end = w[:i], true
		}
		if strings.Trim(w, ".") != "" {
			for len(w) > 0 && strings.ContainsRune(".,:!?'", rune(w[len(w)-1])) {
				w, end = w[:len(w)-1], true
			}
		}
		w = strings.TrimLeft(w, "[")
		w = strings.TrimRight(w, "]")
		if w != "" {
			words = append(words, w)
		}
		if end {
			break
		}
	}
	return words
}

var wordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// alternatives splits a word such as "install|uninstall" or "on|off" into
// its choices; ok is false when one of them is not a plain lower-case word
// (a placeholder: <tag>, N, FILE, %s, ...).
func alternatives(w string) (alts []string, ok bool) {
	alts = strings.Split(w, "|")
	for _, a := range alts {
		if !wordRE.MatchString(a) {
			return nil, false
		}
	}
	return alts, true
}

// flagName is the name of a flag word ("--idle-stop-s=30" -> "idle-stop-s"),
// "" when w is not a flag.
func flagName(w string) string {
	if len(w) < 2 || w[0] != '-' || w == "--" {
		return ""
	}
	name := strings.TrimLeft(w, "-")
	name, _, _ = strings.Cut(name, "=")
	if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(name) {
		return ""
	}
	return name
}

// isHelpFlag: every command takes these.
func isHelpFlag(name string) bool { return name == "help" || name == "h" }
