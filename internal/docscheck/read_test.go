package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

// line is one line of text the checks read: a line of a doc, or a line of a
// string literal in a program's (non-test) Go file, with where it stands.
type line struct {
	file string // relative to the module's root, with forward slashes
	n    int
	text string
}

func (l line) String() string { return l.file + ":" + strconv.Itoa(l.n) }

// moduleRoot is the folder holding go.mod (testenv.ModuleRoot).
func moduleRoot(t *testing.T) string { return testenv.ModuleRoot(t) }

// skipDir is a folder the checks do not read: git's, test data, build
// outputs.
func skipDir(name string) bool {
	switch name {
	case ".git", "testdata", "node_modules", "bin", "dist":
		return true
	}
	return false
}

// walk calls f for every file below root the checks read, with its path
// relative to root (forward slashes).
func walk(t *testing.T, root string, f func(rel, path string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(rel), path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docLines is every line of every Markdown file of the tree (README.md,
// docs/*.md, bench/README.md, ...).
func docLines(t *testing.T, root string) []line {
	t.Helper()
	var out []line
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, ".md") {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range strings.Split(string(b), "\n") {
			out = append(out, line{file: rel, n: i + 1, text: s})
		}
	})
	if len(out) == 0 {
		t.Fatal("no Markdown files found")
	}
	return out
}

// stringLines is every line of every string literal in the tree's Go files
// that are not tests: what the programs say.
func stringLines(t *testing.T, root string) []line {
	t.Helper()
	var out []line
	fset := token.NewFileSet()
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			first := fset.Position(lit.Pos()).Line
			raw := strings.HasPrefix(lit.Value, "`")
			for i, l := range strings.Split(s, "\n") {
				n := first
				if raw {
					n += i
				}
				out = append(out, line{file: rel, n: n, text: l})
			}
			return true
		})
	})
	return out
}

// testFuncs is the name of every test, benchmark, fuzz test and example
// function in the tree's _test.go files (whatever their build tags).
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	out := map[string]bool{}
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, "_test.go") {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
	})
	return out
}

// report fails t with every problem, sorted, one a line.
func report(t *testing.T, what string, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	sort.Strings(problems)
	t.Errorf("%d %s:\n%s", len(problems), what, strings.Join(problems, "\n"))
}

// commentLines is every comment line of every Go file of the tree, tests
// included (what a reader of the code is pointed at).
func commentLines(t *testing.T, root string) []line {
	t.Helper()
	var out []line
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, ".go") {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range strings.Split(string(b), "\n") {
			if j := strings.Index(s, "// "); j >= 0 && (strings.TrimSpace(s[:j]) == "" || strings.HasSuffix(s[:j], " ") || strings.HasSuffix(s[:j], "\t")) {
				out = append(out, line{file: rel, n: i + 1, text: s[j:]})
			}
		}
	})
	return out
}
