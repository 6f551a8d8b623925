package daemon

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/stratainstall"
)

// A setup that writes one line longer than a line reader holds (a progress
// bar redrawn with \r and no newline) used to stop the reader: the setup
// then blocked on its full output pipe and the update never ended (not
// even its context ended it: Wait waits for the output copy). The rest of
// the output is drained: the setup ends and its exit code counts.
func TestRunSetupEndsAfterAnOverlongLine(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for Strata's Python")
	}
	dir := t.TempDir()
	py := filepath.Join(dir, "python")
	script := "#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' '#'\necho\necho '[X] the end'\nexit 3\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, lines, err := d.runSetup(ctx, nil, &stratainstall.Install{Root: dir, Python: py}, func(string) {}, "--update")
	if ctx.Err() != nil {
		t.Fatalf("the setup did not end within 20 s after an overlong line (lines %d)", len(lines))
	}
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v, want the setup's exit 3", code, err)
	}
	t.Logf("%d lines kept", len(lines))
}
