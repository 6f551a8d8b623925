package locations

import (
	"path/filepath"
	"testing"
)

func TestHomeOverridesEverything(t *testing.T) {
	h := t.TempDir()
	t.Setenv(EnvHome, h)
	if d := ServiceStateDirs(); len(d) != 1 || d[0] != filepath.Join(h, "state") {
		t.Errorf("StateDirs = %q", d)
	}
}

func TestOwnFoldersFirst(t *testing.T) {
	t.Setenv(EnvHome, "")
	d := ServiceStateDirs()
	if len(d) == 0 || d[0] != Path(StateDir) {
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
