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

	"github.com/strata-companion/companion/app/trayctl"
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

// Lending's commands run through pkexec: its answer tells a declined prompt
// (nothing to say) from a refusal (the sudo command to run by hand) and
// from the command's own failure (its words); without pkexec the error
// says to run it with sudo.
func TestRunElevated(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+":/bin:/usr/bin")
	svc := filepath.Join(dir, "strata-service")
	testenv.WriteExecutable(svc, []byte("#!/bin/sh\n"))
	ctx := context.Background()
	if err := runElevated(ctx, svc, []string{"lend", "code"}); err == nil || !strings.Contains(err.Error(), "pkexec is not installed") ||
		!strings.HasSuffix(err.Error(), "run in a terminal: sudo strata-service lend code") {
		t.Errorf("without pkexec: %v", err)
	}
	pkexec := func(script string) {
		testenv.WriteExecutable(filepath.Join(dir, "pkexec"), []byte("#!/bin/sh\necho \"$@\" > "+dir+"/args\n"+script))
	}
	pkexec("exit 0\n")
	if err := runElevated(ctx, svc, []string{"lend", "stop"}); err != nil {
		t.Errorf("a command that ended well: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "args")); string(b) != svc+" lend stop\n" {
		t.Errorf("pkexec ran %q, want the service by its full path", b)
	}
	pkexec("exit 126\n")
	if err := runElevated(ctx, svc, []string{"lend", "code"}); !errors.Is(err, trayctl.ErrDeclined) {
		t.Errorf("a dismissed prompt: %v, want ErrDeclined", err)
	}
	pkexec("echo 'Error executing command as another user: No authentication agent found.' >&2\nexit 127\n")
	if err := runElevated(ctx, svc, []string{"lend", "code"}); err == nil || !strings.Contains(err.Error(), "No authentication agent found") ||
		!strings.HasSuffix(err.Error(), "sudo strata-service lend code") {
		t.Errorf("no polkit agent: %v", err)
	}
	pkexec("echo '... something' >&2\necho 'strata-service lend code: this PC is not lending its GPU: run strata-service lend first' >&2\nexit 1\n")
	if err := runElevated(ctx, svc, []string{"lend", "code"}); err == nil || err.Error() != "this PC is not lending its GPU: run strata-service lend first" {
		t.Errorf("the command's own failure: %v", err)
	}
}
