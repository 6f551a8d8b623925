package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// MakeInstall lays out an install whose config is valid as the companion
// reads it (every file it names exists) and runs vision on the GPU; a second
// call over the same folder gives the same result.
func TestMakeInstallLaysOutAValidInstall(t *testing.T) {
	root := filepath.Join(t.TempDir(), "Strata")
	for i := 0; i < 2; i++ {
		got, err := MakeInstall(root)
		if err != nil || got != root {
			t.Fatalf("MakeInstall: %q %v", got, err)
		}
	}
	c, err := strataconfig.Read(filepath.Join(root, "strata-iq2_xs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("the demo config has problems: %v", err)
	}
	if c.Placement() != settings.PlacementGPU || c.Port() != 8080 {
		t.Fatalf("placement %s, port %d", c.Placement(), c.Port())
	}
	for _, f := range []string{"serve/server.py", ".venv/bin/python", "run-iq2_xs.sh"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}
