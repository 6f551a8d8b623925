//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/events"
)

// `vision` through the running service prints the plan's notes (lazy_load
// turned off) as it does in-process, says before a change that it restarts
// Strata, and with no one at a terminal refuses such a change (exit 2,
// nothing written) unless --yes; a move that needs no restart just goes.
func TestVisionThroughTheServiceSaysRestartAndNotes(t *testing.T) {
	r := visionRoot(t)
	raw, err := os.ReadFile(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["lazy_load"] = true
	raw, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(r.Config, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := startRun(t, r)
	var since uint64
	// Strata refuses lazy loading with vision (exit 2): the service gives
	// up at once with Strata's words instead of restarting it.
	if seen := follow(t, c, &since, events.ServerFailed); !strings.Contains(seen[len(seen)-1].Message, "lazy loading is text-only") {
		t.Fatalf("the failure does not say why: %s", seen[len(seen)-1].Message)
	}
	ctx := context.Background()
	cli := func(args ...string) (int, string) {
		out := &syncBuf{}
		code := Main(ctx, args, strings.NewReader(""), out, out)
		return code, out.String()
	}

	code, out := cli("vision", "cpu", "--dry-run")
	if code != 0 || !strings.Contains(out, "note: turned lazy_load off") || !strings.Contains(out, "Strata will restart") {
		t.Fatalf("vision cpu --dry-run through the service: exit %d\n%s", code, out)
	}
	code, out = cli("vision", "cpu")
	if code != 2 || !strings.Contains(out, "Strata will restart") || !strings.Contains(out, "--yes") {
		t.Fatalf("vision cpu with no terminal and no --yes: exit %d\n%s", code, out)
	}
	if now, _ := os.ReadFile(r.Config); !bytes.Equal(now, raw) {
		t.Fatalf("the refused change wrote the config:\n%s", now)
	}
	code, out = cli("vision", "cpu", "--yes")
	// Issue 40: one story: the service restarts Strata, and nothing asks
	// the user to restart it too.
	if code != 0 || !strings.Contains(out, "note: turned lazy_load off") || !strings.Contains(out, "Strata will restart") ||
		!strings.Contains(out, "restarting the Strata server") || strings.Contains(out, "not restarted") || strings.Contains(out, "for this to take effect") {
		t.Fatalf("vision cpu --yes: exit %d\n%s", code, out)
	}
	if p, err := agreement(ctx, c, r.Config); err != nil || p != "cpu" {
		t.Fatalf("after vision cpu --yes: %s %v", p, err)
	}
	follow(t, c, &since, events.ServerReady) // lazy loading off: Strata starts
	// CPU -> off changes only the settings: no question, no restart.
	code, out = cli("vision", "off")
	if code != 0 || !strings.Contains(out, "no restart") {
		t.Fatalf("vision off from cpu: exit %d\n%s", code, out)
	}
}
