package lendshown

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadFileClearsAnExpiredCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	earlier := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	s, err := ReadFile(write("valid.json", `{"name":"gpu-laptop","code":"ABCD-EFGH","expires":"`+later+`","paired":["strata-pc"]}`))
	if err != nil || s.Name != "gpu-laptop" || s.Code != "ABCD-EFGH" || len(s.Paired) != 1 || s.Paired[0] != "strata-pc" {
		t.Fatalf("a valid view read as %+v, %v", s, err)
	}
	if s.CodeAt(s.Expires) != "" || s.CodeAt(s.Expires.Add(-time.Second)) != "ABCD-EFGH" {
		t.Errorf("CodeAt around the expiry: %q, %q", s.CodeAt(s.Expires), s.CodeAt(s.Expires.Add(-time.Second)))
	}
	s, err = ReadFile(write("expired.json", `{"name":"gpu-laptop","code":"ABCD-EFGH","expires":"`+earlier+`"}`))
	if err != nil || s.Code != "" || s.Name != "gpu-laptop" {
		t.Errorf("an expired code read as %+v, %v", s, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no file: %v, want os.ErrNotExist (this PC does not lend)", err)
	}
	if (*Shown)(nil).CodeAt(time.Now()) != "" {
		t.Error("no view has a code")
	}
}
