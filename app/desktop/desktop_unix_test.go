//go:build !windows

package desktop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

func TestLockOnePerSession(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	first, err := Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second lock: %v, want ErrAlreadyRunning", err)
	}
	first.Close()
	again, err := Lock()
	if err != nil {
		t.Fatalf("lock after the first tray ended: %v", err)
	}
	again.Close()
}

func TestSetupPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if _, err := SetupPath(); err == nil || !strings.Contains(err.Error(), "reinstall") {
		t.Errorf("missing setup: %v", err)
	}
	testenv.WriteExecutable(filepath.Join(dir, "strata-setup"), []byte("#!/bin/sh\n"))
	if p, err := SetupPath(); err != nil || p != filepath.Join(dir, "strata-setup") {
		t.Errorf("SetupPath = %q, %v", p, err)
	}
}

// The dialog's answer is its exit code; a missing dialog program is "not
// asked" so the caller can go ahead and say so.
func TestConfirm(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if _, asked := confirm(context.Background(), "t", "q"); asked {
		t.Error("asked without a dialog program")
	}
	for code, want := range map[int][2]bool{0: {true, true}, 1: {false, true}, 5: {false, false}} {
		testenv.WriteExecutable(filepath.Join(dir, "kdialog"), []byte(fmt.Sprintf("#!/bin/sh\necho \"$@\" > %s/args\nexit %d\n", dir, code)))
		yes, asked := confirm(context.Background(), "Switch vision", "Continue?")
		if yes != want[0] || asked != want[1] {
			t.Errorf("exit %d: yes=%v asked=%v, want %v", code, yes, asked, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "args")); string(b) != "--title Switch vision --yesno Continue?\n" {
		t.Errorf("kdialog got %q", b)
	}
}
