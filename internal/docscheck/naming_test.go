package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	// startsProgram: a test that starts a real program (sshd, Xvfb, a
	// network namespace, wine, a program it built).
	startsProgram = regexp.MustCompile(`testenv\.(StartSSHD|StartDisplay|NewNetns|NewLAN|StartLendProbe|StartWindowsPC|SharedWine|WineFor|Program)\(`)
	// goBuild: `go build` run by a test itself.
	goBuild        = regexp.MustCompile(`exec\.Command(Context)?\((ctx, )?"go"`)
	integrationRE  = regexp.MustCompile(`_integration(_[a-z0-9]+)?_test\.go$`)
	benchFolderRel = "bench/" // benchmarks build other revisions of the tree from source (git archive)
)

// The README's promise: a test that starts a real program is in a
// *_integration_test.go file (*_integration_linux_test.go and the like), so
// `git ls-files '*_integration*_test.go'` lists them; the programs it starts
// are built with testenv.Program, never `go build` run by the test.
func TestProgramsStartOnlyInIntegrationFiles(t *testing.T) {
	root := moduleRoot(t)
	var problems []string
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, benchFolderRel) {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := startsProgram.Find(b); m != nil && !integrationRE.MatchString(rel) {
			problems = append(problems, rel+": calls "+string(m)+" but is not named *_integration_test.go")
		}
		if m := goBuild.Find(b); m != nil {
			problems = append(problems, rel+": runs `go` itself ("+string(m)+"); build the program with testenv.Program")
		}
	})
	report(t, "tests that start programs against the README's rule", problems)
}

// sshdStarters are testenv's functions that start a real sshd.
var sshdStarters = map[string]bool{"StartSSHD": true, "StartWindowsPC": true}

// sshdTests lists the tests of the tree that start a real sshd, directly or
// through a helper of their own folder's tests (a function or method that
// does, at any depth), each as its file, ": " and its name. A helper is followed by name,
// so one that merely shares a name with an sshd helper counts too.
func sshdTests(t *testing.T, root string) []string {
	t.Helper()
	type fn struct {
		file, name string
		starts     bool
		uses       map[string]bool
	}
	byDir := map[string][]*fn{}
	fset := token.NewFileSet()
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			x := &fn{file: rel, name: fd.Name.Name, uses: map[string]bool{}}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == "testenv" && sshdStarters[n.Sel.Name] {
						x.starts = true
					}
					x.uses[n.Sel.Name] = true
				case *ast.Ident:
					x.uses[n.Name] = true
				}
				return true
			})
			dir := filepath.Dir(rel)
			byDir[dir] = append(byDir[dir], x)
		}
	})
	var out []string
	for _, fns := range byDir {
		starts := map[string]bool{}
		for _, f := range fns {
			if f.starts {
				starts[f.name] = true
			}
		}
		for more := true; more; {
			more = false
			for _, f := range fns {
				if starts[f.name] {
					continue
				}
				for u := range f.uses {
					if starts[u] {
						starts[f.name], more = true, true
						break
					}
				}
			}
		}
		for _, f := range fns {
			if strings.HasPrefix(f.name, "Test") && starts[f.name] {
				out = append(out, f.file+": "+f.name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// A test that starts a real sshd (testenv.StartSSHD, StartWindowsPC, or a
// helper of its package's tests that calls one) says so twice: its file is
// *_integration_test.go and its name has "Integration" in it, so
// `go test -run Integration` picks them and `-skip Integration` leaves them
// out. TestProgramsStartOnlyInIntegrationFiles sees only direct calls; this
// follows the helpers.
func TestSSHDTestsSayIntegration(t *testing.T) {
	root := moduleRoot(t)
	var problems []string
	all := sshdTests(t, root)
	for _, s := range all {
		file, name, _ := strings.Cut(s, ": ")
		if !integrationRE.MatchString(file) {
			problems = append(problems, s+": starts a real sshd but is not in a *_integration_test.go file")
		}
		if !strings.Contains(name, "Integration") {
			problems = append(problems, s+": starts a real sshd but has no \"Integration\" in its name")
		}
	}
	if len(all) == 0 {
		t.Fatal("found no test that starts sshd: the check reads nothing")
	}
	t.Logf("%d tests start a real sshd", len(all))
	report(t, "sshd tests against the naming rule", problems)
}
