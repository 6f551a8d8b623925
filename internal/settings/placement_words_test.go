package settings

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// leadOwned are files that still spell a placement's words, owned by
// another change under way; each names what replaces the words. The test
// logs them instead of failing; an entry whose file no longer spells a
// label fails, so the list only shrinks.
var leadOwned = map[string]string{
	// placementWords: rec.Placement.Words(""), plus " %d (vision.cuda_device %d)"
	// for a spare GPU; left to the change that owns service/cli.
	"service/cli/cmd_probe.go": "placementWords should read rec.Placement.Words",
}

// placementLabels are the words of the table a Go file must not spell
// itself: each row's name, short word, label and where-words, and the
// tray's "Vision: ..." lines. (The menu word alone, "second PC", also names
// the machine, as in a page title; it counts only in the tray's line.) A word that is also a placement's
// wire value ("off", "CPU") is left out: those literals are everywhere for
// other reasons.
func placementLabels() map[string]Placement {
	ids := map[string]bool{}
	for _, p := range Placements {
		ids[strings.ToLower(string(p.ID))] = true
	}
	out := map[string]Placement{}
	for _, p := range Placements {
		for _, w := range []string{p.Name, p.Short, p.Label, p.Where, "Vision: " + p.Menu, "Vision: " + p.Where} {
			if !ids[strings.ToLower(w)] {
				out[strings.ToLower(w)] = p.ID
			}
		}
	}
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// TestPlacementLabelsOnlyHere: no non-test Go file outside this package has
// a string literal that is one of the placements table's words ("this PC's
// GPU", "A second PC", "Vision: this GPU", "on the second PC", in any
// case): the tray, the setup, the service and the CLI read them from
// Placements, so a placement is worded one way everywhere.
func TestPlacementLabelsOnlyHere(t *testing.T) {
	root := moduleRoot(t)
	labels := placementLabels()
	self, _ := filepath.Abs(".")
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "vendor" || n == "testdata" || n == "node_modules") || path == self {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if p, ok := labels[strings.ToLower(s)]; ok {
				found[rel] = append(found[rel], fmtal(fset.Position(lit.Pos()).Line, s, p))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for f := range found {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if why, ok := leadOwned[f]; ok {
			t.Logf("%s still spells placement words (%s): %s", f, why, strings.Join(found[f], "; "))
			continue
		}
		t.Errorf("%s spells placement words itself; read them from settings.Placements (Info, Name, ShortName, MenuName, Words, Pictures): %s", f, strings.Join(found[f], "; "))
	}
	for f := range leadOwned {
		if _, ok := found[f]; !ok {
			t.Errorf("%s no longer spells placement words: take it off leadOwned", f)
		}
	}
}

func fmtal(line int, s string, p Placement) string {
	return "line " + strconv.Itoa(line) + " " + strconv.Quote(s) + " (" + string(p) + ")"
}
