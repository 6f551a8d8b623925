package account

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The protection comes before the data: protect sees an empty file, and a
// protect that fails leaves the old file whole and no temporary file.
func TestReplacePrivateProtectsBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "control-operator-token")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	err := replacePrivate(p, []byte("new\n"), 0o600, func(f *os.File, tmp string) error {
		if st, err := f.Stat(); err != nil || st.Size() != 0 {
			t.Errorf("protect saw %v bytes (%v): the data came first", st.Size(), err)
		}
		if filepath.Dir(tmp) != dir {
			t.Errorf("the temporary file %s is not beside %s", tmp, p)
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("replacePrivate = %v, want the protect's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old\n" {
		t.Errorf("after a failed protect the file reads %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	if err := replacePrivate(p, []byte("new\n"), 0o600, func(*os.File, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("the file reads %q, want the new data", b)
	}
}
