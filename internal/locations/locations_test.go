package locations

import (
	"os"
	"path/filepath"
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
