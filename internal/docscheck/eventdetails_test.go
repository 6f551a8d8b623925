package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestNoUntypedEventDetailReads: no Go file outside internal/events, tests
// included, indexes an event's details by key (`e.Details["key"]`) or
// ranges over them (`range e.Details`): a reader decodes the details as
// its kind's payload type (events.Get[events.XxxDetails](e)), so a key's
// name and type are written once, in internal/events/payloads.go, and the
// compiler holds every reader to them. The check reads the syntax: an index
// or a range whose operand is a selector ending in .Details.
func TestNoUntypedEventDetailReads(t *testing.T) {
	root := moduleRoot(t)
	var problems []string
	fset := token.NewFileSet()
	walk(t, root, func(rel, path string) {
		if !strings.HasSuffix(rel, ".go") || strings.HasPrefix(rel, "internal/events/") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		isDetails := func(x ast.Expr) bool {
			s, ok := ast.Unparen(x).(*ast.SelectorExpr)
			return ok && s.Sel.Name == "Details"
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				if isDetails(n.X) {
					problems = append(problems, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": indexes .Details by key")
				}
			case *ast.RangeStmt:
				if isDetails(n.X) {
					problems = append(problems, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": ranges over .Details")
				}
			}
			return true
		})
	})
	report(t, "untyped event detail reads outside internal/events (read them with events.Get[events.XxxDetails](e))", problems)
}
