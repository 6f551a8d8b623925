package locations

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestOverrideKeepsEverythingUnderOneFolder(t *testing.T) {
	h := t.TempDir()
	t.Setenv(EnvHome, h)
	for _, p := range []string{SettingsFile(), KnownHostsFile(), RelayKeyFile(), ControlTokenFile(), ServerLogFile()} {
		rel, err := filepath.Rel(h, p)
		if err != nil || rel == "" || rel[0] == '.' {
			t.Errorf("%s is not under %s", p, h)
		}
	}
	d, err := EnsureDir(SecretsDir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(d)
	if st.Mode().Perm() != 0o700 {
		t.Errorf("secrets folder mode %v, want 0700", st.Mode().Perm())
	}
}

func TestClientsAlsoLookWhereASystemServiceWrites(t *testing.T) {
	t.Setenv(EnvHome, "")
	dirs := ServiceStateDirs()
	if len(dirs) == 0 || dirs[0] != Path(StateDir) {
		t.Fatalf("ServiceStateDirs = %q: own folder must come first", dirs)
	}
	if runtime.GOOS == "linux" {
		// One place per machine, for root and for a normal user alike.
		if len(dirs) != 1 || dirs[0] != "/var/lib/strata-companion" {
			t.Errorf("state %q: want the machine's one place", dirs)
		}
	}
	h := t.TempDir()
	t.Setenv(EnvHome, h)
	if d := ServiceStateDirs(); len(d) != 1 || d[0] != filepath.Join(h, "state") {
		t.Errorf("with %s set only it counts: %q", EnvHome, d)
	}
}
