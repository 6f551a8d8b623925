//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// OpenPath opens the folders between a file and the temp root, keeps a
// sticky bit, and never touches the temp root itself (shared by every test
// and account: once a loop made /tmp 0755).
func TestOpenPathStopsBelowTheTempRoot(t *testing.T) {
	root, err := os.MkdirTemp("", "openpath-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	beside, err := os.MkdirTemp("", "openpath-beside-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(beside)
	if err := os.Chmod(root, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "a", "b")
	file := filepath.Join(b, "prog")
	os.MkdirAll(b, 0o700)
	os.WriteFile(file, []byte("#!/bin/sh\n"), 0o700)
	os.Chmod(a, os.ModeSticky|0o700)
	OpenPath(t, file)
	for path, want := range map[string]os.FileMode{root: 0o777 | os.ModeSticky, a: 0o755 | os.ModeSticky, b: 0o755, file: 0o755} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode() & (os.ModePerm | os.ModeSticky); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	// Outside the temp root: the path alone.
	x := filepath.Join(beside, "x")
	os.Mkdir(x, 0o700)
	OpenPath(t, x)
	for path, want := range map[string]os.FileMode{beside: 0o700, x: 0o755} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, st.Mode(), err, want)
		}
	}
}
