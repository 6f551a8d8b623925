package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenPath lets every account reach path (a test's folder or file that a
// process of another account must read or run): path and each folder above
// it get read and search for group and others (0o055 added, the rest of the
// mode, sticky bit included, kept), up to but never including the temp root
// (os.TempDir(): make test's own TMPDIR, or /tmp), which is shared by every
// test and every account and must stay as it is. A path outside the temp
// root is opened alone.
//
// It is the one copy of this walk: a hand-written loop once stepped past its
// own stop and made /tmp 0755, so that every other account's temp files
// (an agent's scratch folder) failed, in a test far away.
func OpenPath(t testing.TB, path string) {
	t.Helper()
	root := filepath.Clean(os.TempDir())
	path = filepath.Clean(path)
	for d := path; ; d = filepath.Dir(d) {
		if d == root || d == filepath.Dir(d) {
			return
		}
		st, err := os.Stat(d)
		if err != nil {
			t.Fatalf("OpenPath: %v", err)
		}
		mode := st.Mode() & (os.ModePerm | os.ModeSticky | os.ModeSetgid)
		if st.IsDir() || d == path {
			if err := os.Chmod(d, mode|0o055); err != nil {
				t.Fatalf("OpenPath: %v", err)
			}
		}
		if !strings.HasPrefix(d, root+string(filepath.Separator)) {
			return // outside the temp root: the path alone
		}
	}
}
