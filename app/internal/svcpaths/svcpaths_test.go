package svcpaths

import (
	"path/filepath"
	"testing"

	"github.com/strata-companion/companion/internal/locations"
)

func TestHomeOverridesEverything(t *testing.T) {
	h := t.TempDir()
	t.Setenv(locations.EnvHome, h)
	if d := StateDirs(); len(d) != 1 || d[0] != filepath.Join(h, "state") {
		t.Errorf("StateDirs = %q", d)
	}
}

func TestOwnFoldersFirst(t *testing.T) {
	t.Setenv(locations.EnvHome, "")
	d := StateDirs()
	if len(d) == 0 || d[0] != locations.Path(locations.StateDir) {
		t.Fatalf("StateDirs = %q", d)
	}
	seen := map[string]bool{}
	for _, p := range d {
		if seen[p] {
			t.Errorf("%s twice", p)
		}
		seen[p] = true
	}
}
