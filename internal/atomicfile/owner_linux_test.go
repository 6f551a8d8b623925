package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Low: a vision change by the root service left a user's Strata config
// owned by root. A replaced file keeps its owner.
func TestWriteKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the file belongs to another account")
	}
	p := filepath.Join(t.TempDir(), "strata-x.json")
	os.WriteFile(p, []byte("{}"), 0o644)
	os.Chown(p, 65534, 65534)
	if err := Write(p, []byte(`{"port": 8080}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || sys.Gid != 65534 || st.Mode().Perm() != 0o644 {
		t.Fatalf("after the write: uid %d gid %d mode %o", sys.Uid, sys.Gid, st.Mode().Perm())
	}
}
