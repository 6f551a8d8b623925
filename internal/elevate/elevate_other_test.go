//go:build !windows

package elevate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

// Lending's commands run through pkexec: its answer tells a declined prompt
// (nothing to say) from a refusal (the sudo command to run by hand) and
// from the command's own failure (its words); without pkexec the error
// says to run it with sudo.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+":/bin:/usr/bin")
	svc := filepath.Join(dir, "strata-service")
	testenv.WriteExecutable(svc, []byte("#!/bin/sh\n"))
	ctx := context.Background()
	if err := Run(ctx, svc, "lend", "code"); err == nil || !strings.Contains(err.Error(), "pkexec is not installed") ||
		!strings.HasSuffix(err.Error(), "run in a terminal: sudo strata-service lend code") {
		t.Errorf("without pkexec: %v", err)
	}
	pkexec := func(script string) {
		testenv.WriteExecutable(filepath.Join(dir, "pkexec"), []byte("#!/bin/sh\necho \"$@\" > "+dir+"/args\n"+script))
	}
	pkexec("exit 0\n")
	if err := Run(ctx, svc, "lend", "stop"); err != nil {
		t.Errorf("a command that ended well: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "args")); string(b) != svc+" lend stop\n" {
		t.Errorf("pkexec ran %q, want the service by its full path", b)
	}
	pkexec("exit 126\n")
	if err := Run(ctx, svc, "lend", "code"); !errors.Is(err, ErrDeclined) {
		t.Errorf("a dismissed prompt: %v, want ErrDeclined", err)
	}
	pkexec("echo 'Error executing command as another user: No authentication agent found.' >&2\nexit 127\n")
	if err := Run(ctx, svc, "lend", "code"); err == nil || !strings.Contains(err.Error(), "No authentication agent found") ||
		!strings.HasSuffix(err.Error(), "sudo strata-service lend code") {
		t.Errorf("no polkit agent: %v", err)
	}
	pkexec("echo '... something' >&2\necho 'strata-service lend code: this PC is not lending its GPU: run strata-service lend first' >&2\nexit 1\n")
	if err := Run(ctx, svc, "lend", "code"); err == nil || err.Error() != "this PC is not lending its GPU: run strata-service lend first" {
		t.Errorf("the command's own failure: %v", err)
	}
}
