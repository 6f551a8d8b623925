package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "new" {
		t.Fatalf("content = %q, want new", got)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v, want 0640 kept", st.Mode().Perm())
	}
}

func TestFailureBeforeRenameLeavesOldFileWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "strata-x.json")
	old := []byte(`{"port": 8080}`)
	os.WriteFile(p, old, 0o644)
	beforeRename = func(string) error { return errors.New("simulated crash") }
	defer func() { beforeRename = func(string) error { return nil } }()
	if err := Write(p, []byte(`{"port": 9`), 0o644); err == nil {
		t.Fatal("want an error")
	}
	got, _ := os.ReadFile(p)
	if string(got) != string(old) {
		t.Fatalf("old file changed: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}
