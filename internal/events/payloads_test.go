package events

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// Every Kind constant declared in this package has exactly one details type
// in Payloads.
func TestEveryKindHasAPayload(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[Kind]string{}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					declared[Kind(v)] = n.Name
				}
			}
		}
	}
	have := map[Kind]int{}
	for _, p := range Payloads {
		have[p.EventKind()]++
	}
	for k, name := range declared {
		if have[k] != 1 {
			t.Errorf("kind %s (%s) has %d details types in Payloads, want 1", name, k, have[k])
		}
	}
	for k := range have {
		if _, ok := declared[k]; !ok {
			t.Errorf("Payloads has %s, which is not a Kind declared in internal/events", k)
		}
	}
	if len(declared) < 30 {
		t.Errorf("only %d kinds found: the parser lost them", len(declared))
	}
}

// One meaning per key: a detail's name has the same Go type in every kind.
func TestEveryKeyHasOneMeaning(t *testing.T) {
	seen := map[string]reflect.Type{}
	where := map[string]string{}
	var walk func(kind Kind, tp reflect.Type)
	walk = func(kind Kind, tp reflect.Type) {
		for i := 0; i < tp.NumField(); i++ {
			f := tp.Field(i)
			if f.Anonymous {
				walk(kind, f.Type)
				continue
			}
			name := jsonName(f)
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no json name", tp.Name(), f.Name)
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem() // *bool is a bool that may be absent
			}
			if prev, ok := seen[name]; ok && prev != ft {
				t.Errorf("detail %q is %s in %s but %s in %s", name, prev, where[name], ft, kind)
			}
			seen[name], where[name] = ft, string(kind)
		}
	}
	for _, p := range Payloads {
		walk(p.EventKind(), reflect.TypeOf(p))
	}
}

// What New writes, Get reads back, through the wire's JSON too; a detail of
// a wrong type spoils only itself; another kind's type reads nothing.
func TestNewThenGet(t *testing.T) {
	yes := true
	in := PictureEncodedDetails{RelayMark: RelayMark{Relay: 42}, OK: &yes, Where: WhereRemote, Host: "pc", MS: 2830, EncodeMS: 1200, Tokens: 1024}
	e := New("", in)
	if e.Kind != PictureEncoded {
		t.Fatalf("kind %s", e.Kind)
	}
	if got := Get[PictureEncodedDetails](e); !reflect.DeepEqual(got, in) {
		t.Errorf("in process: %+v, want %+v", got, in)
	}
	b, _ := json.Marshal(e)
	var wire Event
	json.Unmarshal(b, &wire)
	if got := Get[PictureEncodedDetails](wire); !reflect.DeepEqual(got, in) {
		t.Errorf("over the wire: %+v, want %+v", got, in)
	}
	wire.Details["ms"] = "soon"
	if got := Get[PictureEncodedDetails](wire); got.MS != 0 || got.Host != "pc" || got.Relay != 42 {
		t.Errorf("one bad detail: %+v", got)
	}
	if got := Get[ServerExitedDetails](wire); !reflect.DeepEqual(got, ServerExitedDetails{}) {
		t.Errorf("another kind's details read from a picture: %+v", got)
	}
	if New("x", ServerStoppedDetails{}).Details != nil {
		t.Error("an empty payload has no details")
	}
}
