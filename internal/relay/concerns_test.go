package relay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestPrepareSharesNothingWithARunningRelay: preparing the second PC
// (prepare.go, upload.go, sftp.go) is another concern than serving Strata:
// it uses the transport (Conn) and the agent's command line, never a
// Relay or one of its parts, so a change to either cannot reach the other.
func TestPrepareSharesNothingWithARunningRelay(t *testing.T) {
	running := map[string]bool{
		"Relay": true, "Options": true, "router": true, "link": true, "linkState": true, "linkCheck": true,
		"agentSession": true, "output": true, "relayMark": true, "pictureTimes": true,
	}
	fs := token.NewFileSet()
	for _, name := range []string{"prepare.go", "upload.go", "sftp.go"} {
		f, err := parser.ParseFile(fs, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && running[id.Name] {
				t.Errorf("%s: %s uses %s, a part of the running relay", fs.Position(id.Pos()), name, id.Name)
			}
			return true
		})
	}
}
