package docscheck

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

var (
	// startsProgram: a test that starts a real program (sshd, Xvfb, a
	// network namespace, wine, a program it built).
	startsProgram = regexp.MustCompile(`testenv\.(StartSSHD|StartDisplay|NewNetns|StartWindowsPC|SharedWine|WineFor|Program)\(`)
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
