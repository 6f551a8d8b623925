package fserr

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/testenv"
)

// A full disk is named as such, with the folder, and never sends the user
// (root here) to an administrator.
func TestFullDiskIsNamed(t *testing.T) {
	dir := testenv.SmallDisk(t, 64<<10)
	testenv.Fill(t, dir)
	p := filepath.Join(dir, "settings.json")
	err := atomicfile.Write(p, make([]byte, 8192), 0o644)
	if err == nil {
		t.Fatal("a write to a full disk succeeded")
	}
	got := Explain(err, p)
	if !strings.Contains(got.Error(), "the disk holding "+dir+" is full") {
		t.Fatalf("got %q, want the full disk named", got)
	}
	if strings.Contains(got.Error(), "administrator") {
		t.Fatalf("a full disk advises an administrator: %q", got)
	}
	if !errors.Is(got, syscall.ENOSPC) || CauseOf(got) != DiskFull {
		t.Fatalf("the original error is lost: %v", got)
	}
	if Explain(got, p) != got {
		t.Fatal("explaining twice wraps twice")
	}
}
