package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var testNameRE = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z0-9_][A-Za-z0-9_]*`)

// citedTests are the test functions the docs name, with where.
func citedTests(lines []line) map[string][]line {
	out := map[string][]line{}
	for _, l := range lines {
		for _, name := range testNameRE.FindAllString(l.text, -1) {
			out[name] = append(out[name], l)
		}
	}
	return out
}

// Every test, benchmark and fuzz test a doc or a Go comment cites (as the
// one that holds a rule) is a function in the tree: nothing points at a
// removed test.
func TestEveryCitedTestExists(t *testing.T) {
	root := moduleRoot(t)
	have := testFuncs(t, root)
	cited := citedTests(append(docLines(t, root), commentLines(t, root)...))
	var problems []string
	for name, where := range cited {
		if have[name] {
			continue
		}
		for _, l := range where {
			problems = append(problems, l.String()+": cites "+name+", which is no test function in the tree")
		}
	}
	t.Logf("%d tests cited, %d test functions in the tree", len(cited), len(have))
	report(t, "cited tests that do not exist", problems)
}

// topDirs are the module root's folders a doc may cite paths under
// (internal/..., service/..., docs/..., .ci/...), build outputs aside.
func topDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !skipDir(e.Name()) {
			dirs = append(dirs, regexp.QuoteMeta(e.Name()))
		}
	}
	return dirs
}

var (
	lineSuffixRE = regexp.MustCompile(`(:\d+(-\d+)?)+$`)
	mdLinkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// citedPaths are the repository paths a line cites: a word that starts with
// one of the root's folders and a slash (internal/relay/route.go,
// docs/security.md, service/cli/cmd_*.go, ./internal/...), and the targets of
// its relative Markdown links, resolved from the doc's folder.
func citedPaths(l line, pathRE *regexp.Regexp) []string {
	var out []string
	for _, m := range pathRE.FindAllStringSubmatch(l.text, -1) {
		p := m[2]
		if strings.ContainsAny(p, "<>{}") {
			continue // a placeholder: bin/<os>-<arch>/
		}
		p = strings.TrimRight(p, ".,:;!?'")
		p = lineSuffixRE.ReplaceAllString(p, "")
		p = strings.TrimSuffix(p, "/...")
		p, _, _ = strings.Cut(p, "#")
		out = append(out, strings.TrimSuffix(p, "/"))
	}
	if strings.HasSuffix(l.file, ".md") {
		for _, m := range mdLinkRE.FindAllStringSubmatch(l.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			out = append(out, filepath.ToSlash(filepath.Join(filepath.Dir(l.file), target)))
		}
	}
	return out
}

// pathRE finds words that start with one of dirs and a slash.
func pathRE(dirs []string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s` + "`" + `('"\[*])(?:\./)?((?:` + strings.Join(dirs, "|") + `)/[A-Za-z0-9_.*/<>{}#:-]*)`)
}

var identRE = regexp.MustCompile(`^([^.]+)\.([A-Z][A-Za-z0-9_]*)(\.[A-Za-z0-9_]+)?$`)

// exists: the path (a glob where it has a *) names something in the tree;
// a package and one of its names (service/state.Tracker,
// internal/autostart.Entry.Set) is a folder whose Go files declare it.
func exists(root, rel string) bool {
	if m := identRE.FindStringSubmatch(rel); m != nil {
		return declares(filepath.Join(root, filepath.FromSlash(m[1])), m[2])
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	if strings.Contains(rel, "*") {
		m, _ := filepath.Glob(p)
		return len(m) > 0
	}
	_, err := os.Stat(p)
	return err == nil
}

// Every repository path a doc or a Go comment cites (a file, a folder, a
// glob, a package's name, a relative link) is in the tree: nothing points at
// a moved or removed file.
func TestEveryCitedPathExists(t *testing.T) {
	root := moduleRoot(t)
	re := pathRE(topDirs(t, root))
	var problems []string
	n := 0
	for _, l := range append(docLines(t, root), commentLines(t, root)...) {
		for _, p := range citedPaths(l, re) {
			n++
			if !exists(root, p) {
				problems = append(problems, l.String()+": cites "+p+", which is not in the tree")
			}
		}
	}
	t.Logf("%d paths cited", n)
	report(t, "cited paths that do not exist", problems)
}

// The path check reads what a doc cites and nothing else.
func TestCitedPathsAreRead(t *testing.T) {
	re := pathRE([]string{"internal", "docs", "service", `\.ci`})
	for text, want := range map[string]string{
		"see `internal/relay/route.go:90` and":                                  "internal/relay/route.go",
		"(docs/security.md#keys).":                                              "docs/security.md",
		"`go test ./internal/...`":                                              "internal",
		"in service/cli/cmd_*.go,":                                              "service/cli/cmd_*.go",
		"`.ci/run` is what CI runs":                                             ".ci/run",
		"[lifecycle](strata-lifecycle.md)":                                      "docs/strata-lifecycle.md",
		"bin/<os>-<arch>/ and github.com/strata-companion/companion/internal/x": "",
		"under one lock (`service/state.Tracker`), so":                          "service/state.Tracker",
	} {
		got := strings.Join(citedPaths(line{file: "docs/x.md", n: 1, text: text}, re), " ")
		if got != want {
			t.Errorf("%q: cites %q, want %q", text, got, want)
		}
	}
}

// declares: a Go file in dir declares name (a func, type, var or const, or
// a method's receiver type).
func declares(dir, name string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	decl := regexp.MustCompile(`(?m)^(?:func(?: \([^)]*\))?|type|var|const)\s+` + name + `\b|^\s+` + name + `\s+(?:=|[A-Za-z*\[])`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if b, err := os.ReadFile(f); err == nil && decl.Match(b) {
			return true
		}
	}
	return false
}

// A package's name is checked in its Go files, not as a file.
func TestCitedNamesAreDeclared(t *testing.T) {
	root := moduleRoot(t)
	for rel, want := range map[string]bool{
		"service/state.Tracker":         true,
		"internal/autostart.Entry":      true,
		"service/state.NoSuchTracker":   false,
		"internal/nosuchpackage.Entry":  false,
		"internal/docscheck/doc.go":     true,
		"internal/autostart.Entry.Set":  true,
		"internal/docscheck/nothing.go": false,
	} {
		if got := exists(root, rel); got != want {
			t.Errorf("exists(%s) = %v, want %v", rel, got, want)
		}
	}
}
