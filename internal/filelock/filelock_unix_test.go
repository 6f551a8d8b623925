//go:build !windows

package filelock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The lock holds across processes: a child process (flock(1)) holding it
// makes TryLock fail, and its death releases it.
func TestLockAcrossProcesses(t *testing.T) {
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	// Made as TryLock makes it (private): flock(1) would make it 0644,
	// which TryLock replaces (see TestAnotherAccountCannotHoldTheLock).
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(bin, path, "sh", "-c", "touch "+ready+"; sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i > 500 {
			t.Fatal("flock(1) did not take the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryLock while another process holds it: %v", err)
	}
	kill()
	l, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	l.Unlock()
}
