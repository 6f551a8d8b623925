package docscheck

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The import rules (docs/architecture.md, "Packages and their imports"):
// every arrow points down a small table of layers, and none between the
// internal libraries closes a loop through their folders. They hold for the
// packages' own files, every OS's included; a test file is never imported,
// so it may reach up (an integration test of internal/secondpc drives the
// real service/controlserver).

// layers, top first. A package's layer is the first that takes it; an
// import may point to its own layer or a lower one, never a higher one.
var layers = []struct {
	name string
	of   func(p pkgInfo) bool
}{
	{"programs (package main: the four programs, the stand-ins, the tools)", func(p pkgInfo) bool { return p.main }},
	{"the programs' packages (service/..., app/..., wizard/...)", func(p pkgInfo) bool { return isProgramPackage(p.path) }},
	{"the libraries (internal/..., assets)", func(pkgInfo) bool { return true }},
}

// isProgramPackage: a package of one of the four programs, which only that
// program (and its siblings) may import.
func isProgramPackage(rel string) bool {
	for _, top := range []string{"service", "app", "wizard", "relay"} {
		if rel == top || strings.HasPrefix(rel, top+"/") {
			return true
		}
	}
	return false
}

func layerOf(p pkgInfo) int {
	for i, l := range layers {
		if l.of(p) {
			return i
		}
	}
	return len(layers) - 1
}

// pkgInfo is one package of the module: its folder relative to the module's
// root (forward slashes), whether it is a main package, and the module's
// packages its non-test files import (by folder).
type pkgInfo struct {
	path    string
	main    bool
	imports map[string]bool
	// code: the folder has a Go file besides doc.go (a folder with doc.go
	// alone holds tests only).
	code bool
}

// moduleGraph reads the module's packages and their imports among
// themselves with go/parser (imports only): every non-test Go file of a
// folder counts, whatever OS its build constraint names, but a file built
// never (//go:build ignore) does not.
func moduleGraph(t *testing.T, root string) map[string]*pkgInfo {
	t.Helper()
	mod := modulePath(t, root)
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, ".") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if neverBuilt(f.Comments, f.Package) {
			return
		}
		dir := filepath.ToSlash(filepath.Dir(filepath.FromSlash(rel)))
		p := pkgs[dir]
		if p == nil {
			p = &pkgInfo{path: dir, imports: map[string]bool{}}
			pkgs[dir] = p
		}
		p.main = p.main || f.Name.Name == "main"
		p.code = p.code || filepath.Base(rel) != "doc.go"
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			if ip == mod {
				p.imports["."] = true
			} else if rest, ok := strings.CutPrefix(ip, mod+"/"); ok {
				p.imports[rest] = true
			}
		}
	})
	return pkgs
}

// neverBuilt: the file's build constraint is "ignore" (a generator run by
// hand, never part of a build).
func neverBuilt(comments []*ast.CommentGroup, pkg token.Pos) bool {
	for _, g := range comments {
		if g.Pos() >= pkg {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			if e, err := constraint.Parse(c.Text); err == nil && e.String() == "ignore" {
				return true
			}
		}
	}
	return false
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// component is the folder a package's arrows are judged by: the folder
// right under internal/ for every package inside it (internal/relay/prepare
// is internal/relay's), the package itself elsewhere.
func component(rel string) string {
	if parts := strings.Split(rel, "/"); len(parts) > 2 && parts[0] == "internal" {
		return parts[0] + "/" + parts[1]
	}
	return rel
}

// An internal library never imports a program's package: internal/ has no
// arrow up to service/..., app/..., wizard/... or the relay's main package.
func TestInternalImportsNoProgram(t *testing.T) {
	var problems []string
	for _, p := range moduleGraph(t, moduleRoot(t)) {
		if !strings.HasPrefix(p.path, "internal/") {
			continue
		}
		for im := range p.imports {
			if isProgramPackage(im) {
				problems = append(problems, p.path+" imports "+im)
			}
		}
	}
	report(t, "imports of a program's package from internal/ (move what it needs down into internal/, or the helper up beside the program's package, as service/controltest)", problems)
}

// Every arrow points down the layers, and the internal libraries' folders
// import one another without a loop: internal/agent importing the bounds
// when they were a package inside internal/relay, while internal/relay
// imported internal/agent, was an arrow up (its loop runs through the
// folders, so the compiler cannot see it).
func TestNoUpwardImports(t *testing.T) {
	pkgs := moduleGraph(t, moduleRoot(t))
	var problems []string
	comps := map[string]map[string][]string{} // component -> imported component -> the arrows
	for _, p := range pkgs {
		for im := range p.imports {
			q := pkgs[im]
			if q == nil {
				continue // a folder of test files only; the compiler says the rest
			}
			if lp, lq := layerOf(*p), layerOf(*q); lq < lp {
				problems = append(problems, p.path+" ("+layers[lp].name+") imports "+im+" ("+layers[lq].name+")")
			}
			a, b := component(p.path), component(im)
			if a == b || !strings.HasPrefix(a, "internal/") || !strings.HasPrefix(b, "internal/") {
				continue
			}
			if comps[a] == nil {
				comps[a] = map[string][]string{}
			}
			comps[a][b] = append(comps[a][b], p.path+" -> "+im)
		}
	}
	// An arrow between two folders is up when the other folder reaches back.
	compDown := map[string][]string{}
	for a, tos := range comps {
		compDown[a] = sortedKeys(tos)
	}
	for a, tos := range comps {
		for b, arrows := range tos {
			if reaches(compDown, b, a) {
				sort.Strings(arrows)
				problems = append(problems, a+" and "+b+" import each other through their folders: "+strings.Join(arrows, ", "))
			}
		}
	}
	report(t, "upward imports (give what both need a package of its own below them, as internal/encoderproc)", problems)
}

// diagramNode is a node of the mermaid diagram in docs/architecture.md:
// id["folder"].
var diagramNode = regexp.MustCompile(`\b([A-Za-z0-9_]+)\["([^"]+)"\]`)

// diagramArrow is one of its arrows: a --> b (ids).
var diagramArrow = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*-->\s*([A-Za-z0-9_]+)\s*$`)

// The package diagram in docs/architecture.md names only packages that
// exist, and draws only imports that are there (each one direct, as the
// packages' own files make it).
func TestPackageDiagramIsTrue(t *testing.T) {
	root := moduleRoot(t)
	pkgs := moduleGraph(t, root)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var diagram []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(l) == "```mermaid":
			in = true
		case in && strings.TrimSpace(l) == "```":
			in = false
		case in:
			diagram = append(diagram, l)
		}
	}
	if len(diagram) == 0 {
		t.Fatal("docs/architecture.md has no package diagram (a ```mermaid block)")
	}
	var problems []string
	ids := map[string]string{}
	for _, l := range diagram {
		if strings.HasPrefix(strings.TrimSpace(l), "subgraph ") {
			continue // a layer's title, not a package
		}
		for _, m := range diagramNode.FindAllStringSubmatch(l, -1) {
			ids[m[1]] = m[2]
			if pkgs[m[2]] == nil {
				problems = append(problems, "the diagram names "+m[2]+", which is no package of the module")
			}
		}
	}
	for _, l := range diagram {
		m := diagramArrow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		from, to := ids[m[1]], ids[m[2]]
		switch {
		case from == "" || to == "":
			problems = append(problems, "the diagram's arrow "+strings.TrimSpace(l)+" joins an id with no [\"folder\"]")
		case pkgs[from] != nil && !pkgs[from].imports[to]:
			problems = append(problems, "the diagram draws "+from+" -> "+to+", which "+from+" does not import")
		}
	}
	// Complete: every package of the product is drawn, and every import
	// between drawn packages is an arrow or a path of arrows.
	drawn := map[string]bool{}
	for _, path := range ids {
		drawn[path] = true
	}
	down := map[string][]string{}
	for _, l := range diagram {
		if m := diagramArrow.FindStringSubmatch(l); m != nil && ids[m[1]] != "" && ids[m[2]] != "" {
			down[ids[m[1]]] = append(down[ids[m[1]]], ids[m[2]])
		}
	}
	for _, p := range sortedPkgs(pkgs) {
		if !inDiagram(*p) {
			continue
		}
		if !drawn[p.path] {
			problems = append(problems, "the diagram leaves out "+p.path)
			continue
		}
		for _, to := range sortedKeys(p.imports) {
			if q := pkgs[to]; q != nil && inDiagram(*q) && !reaches(down, p.path, to) {
				problems = append(problems, "the diagram has no path "+p.path+" -> "+to+", an import")
			}
		}
	}
	if len(problems) > 0 || os.Getenv("DOCSCHECK_DIAGRAM") == "1" {
		t.Logf("the diagram as the packages are (DOCSCHECK_DIAGRAM=1 prints it):\n%s", diagramOf(pkgs))
	}
	report(t, "mistakes in docs/architecture.md's package diagram", problems)
}

// inDiagram: a package of the product (the diagram leaves out the tools
// and stand-ins, which are main packages below the top folder, bench/,
// assets/gen, and the folders that hold only tests).
func inDiagram(p pkgInfo) bool {
	switch {
	case !p.code, p.main && strings.Contains(p.path, "/"), p.path == "assets/gen",
		p.path == "bench" || strings.HasPrefix(p.path, "bench/"):
		return false
	}
	return true
}

// reaches: a path of arrows in down leads from from to to.
func reaches(down map[string][]string, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(p string) bool {
		if p == to {
			return true
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		for _, q := range down[p] {
			if walk(q) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// diagramOf is the mermaid block for the real graph: the product's
// packages in four layers and the transitive reduction of their imports
// (an arrow a longer path implies is left out).
func diagramOf(pkgs map[string]*pkgInfo) string {
	var shown []*pkgInfo
	for _, p := range sortedPkgs(pkgs) {
		if inDiagram(*p) {
			shown = append(shown, p)
		}
	}
	edges := map[string][]string{}
	for _, p := range shown {
		for _, to := range sortedKeys(p.imports) {
			if q := pkgs[to]; q != nil && inDiagram(*q) {
				edges[p.path] = append(edges[p.path], to)
			}
		}
	}
	id := func(path string) string { return strings.NewReplacer("/", "_", "-", "_", ".", "root").Replace(path) }
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TD\n")
	for i, layer := range []struct {
		title string
		in    func(p *pkgInfo) bool
	}{
		{"programs", func(p *pkgInfo) bool { return p.main }},
		{"the programs' packages", func(p *pkgInfo) bool { return !p.main && isProgramPackage(p.path) }},
		{"internal libraries", func(p *pkgInfo) bool { return !p.main && !isProgramPackage(p.path) && len(edges[p.path]) > 0 }},
		{"leaves (import no package of the module)", func(p *pkgInfo) bool { return !p.main && !isProgramPackage(p.path) && len(edges[p.path]) == 0 }},
	} {
		fmt.Fprintf(&b, "  subgraph L%d[\"%s\"]\n", i, layer.title)
		for _, p := range shown {
			if layer.in(p) {
				fmt.Fprintf(&b, "    %s[\"%s\"]\n", id(p.path), p.path)
			}
		}
		b.WriteString("  end\n")
	}
	for _, p := range shown {
		for _, to := range edges[p.path] {
			// Implied: another import of p reaches to.
			implied := false
			for _, via := range edges[p.path] {
				if via != to && reaches(edges, via, to) {
					implied = true
					break
				}
			}
			if !implied {
				fmt.Fprintf(&b, "  %s --> %s\n", id(p.path), id(to))
			}
		}
	}
	b.WriteString("```\n")
	return b.String()
}

func sortedPkgs(pkgs map[string]*pkgInfo) []*pkgInfo {
	var out []*pkgInfo
	for _, k := range sortedKeys(pkgs) {
		out = append(out, pkgs[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
