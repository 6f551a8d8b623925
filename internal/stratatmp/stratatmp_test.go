package stratatmp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDirAsPythonPicksIt(t *testing.T) {
	if got := Dir([]string{"TMP=/c", "TEMP=/b", "TMPDIR=/a"}); got != "/a" {
		t.Errorf("TMPDIR first: %q", got)
	}
	if got := Dir([]string{"TMP=/c", "TEMP=/b"}); got != "/b" {
		t.Errorf("then TEMP: %q", got)
	}
	if got := Dir([]string{"TMPDIR=/a", "TMPDIR=/z"}); got != "/z" {
		t.Errorf("the last entry wins, as exec does: %q", got)
	}
}

// TestOnlyThisRunsResultFoldersGo: after a run, the folder it made with
// only results in it goes; one from before, one that does not look like
// mkdtemp's, one holding something else, and one changed after the run
// stay.
func TestOnlyThisRunsResultFoldersGo(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, files ...string) string {
		p := filepath.Join(dir, name)
		os.Mkdir(p, 0o700)
		for _, f := range files {
			os.WriteFile(filepath.Join(p, f), []byte("x"), 0o600)
		}
		return p
	}
	mk("strata-vision-before01", "a.sve")
	run := Start(dir)
	ours := mk("strata-vision-abc_1234", "a.sve", "b.sve")
	mk("strata-vision-notmine", "a.sve") // 7 letters: not mkdtemp's
	mk("strata-vision-other123", "a.sve", "notes.txt")
	mk("other-folder", "a.sve")
	exited := time.Now()
	later := mk("strata-vision-later123", "a.sve")
	future := exited.Add(10 * time.Second)
	os.Chtimes(filepath.Join(later, "a.sve"), future, future)
	os.Chtimes(later, future, future)
	removed := run.RemoveLeftovers(exited)
	if len(removed) != 1 || removed[0] != ours {
		t.Fatalf("removed %v, want only %s", removed, ours)
	}
	for _, n := range []string{"strata-vision-before01", "strata-vision-notmine", "strata-vision-other123", "other-folder", "strata-vision-later123"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s was removed", n)
		}
	}
}

// Issue 32, Low: the temp cleanup removed other accounts' folders (a
// strata-vision-* folder another account made in the shared /tmp while
// this run's server ran). Now only the account that ran Strata's own go.
func TestOtherAccountsFoldersStay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a folder of another account")
	}
	dir := t.TempDir()
	run := Start(dir)
	theirs := filepath.Join(dir, "strata-vision-theirs12")
	os.Mkdir(theirs, 0o700)
	os.WriteFile(filepath.Join(theirs, "a.sve"), []byte("x"), 0o600)
	os.Chown(theirs, 65534, 65534)
	ours := filepath.Join(dir, "strata-vision-ours1234")
	os.Mkdir(ours, 0o700)
	os.WriteFile(filepath.Join(ours, "a.sve"), []byte("x"), 0o600)
	removed := run.RemoveLeftovers(time.Now())
	if len(removed) != 1 || removed[0] != ours {
		t.Fatalf("removed %v, want only %s", removed, ours)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Fatalf("another account's folder was removed: %v", err)
	}
}
