package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdAs runs flock(1) on path as cred (nil: this account) until the test
// ends, and waits until it holds the lock (or could not open the file).
func holdAs(t *testing.T, path string, cred *syscall.Credential) (*exec.Cmd, string) {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	os.Chmod(filepath.Dir(dir), 0o755)
	ready := filepath.Join(dir, "ready")
	var out strings.Builder
	cmd := exec.Command(bin, "-n", path, "sh", "-c", "echo 99999 > "+path+" 2>/dev/null; touch "+ready+"; exec sleep 60")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			return cmd, ""
		}
		select {
		case <-exited:
			return nil, out.String()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) neither took the lock nor failed within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// M4: a lock file any account could open let any account hold it, so the
// service answered 409 (or could not start) and named the wrong process.
// Now the file is private: another account cannot open it, and one left
// readable from before is replaced, so an old descriptor holds nothing.
func TestAnotherAccountCannotHoldTheLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the lock is tried as another account (nobody)")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}

	// A fresh lock file: nobody cannot even open it.
	path := filepath.Join(dir, "settings.json.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("the lock file is %o, want 0600", st.Mode().Perm())
	}
	l.Unlock()
	if cmd, out := holdAs(t, path, nobody); cmd != nil {
		t.Fatal("another account holds the lock file")
	} else if !strings.Contains(out, "Permission denied") {
		t.Fatalf("flock as nobody: %s", out)
	}
	if l, err := TryLock(path); err != nil {
		t.Fatalf("the service's lock after nobody tried: %v", err)
	} else {
		l.Unlock()
	}

	// One from an older version, 0644, which nobody holds: replaced, the
	// lock is taken, and the file is private now.
	old := filepath.Join(dir, "service.lock")
	os.WriteFile(old, nil, 0o666)
	os.Chmod(old, 0o666)
	if cmd, out := holdAs(t, old, nobody); cmd == nil {
		t.Fatalf("nobody could not hold the old lock file: %s", out)
	}
	l, err = TryLock(old)
	if err != nil {
		t.Fatalf("a lock another account held on a file it could open: %v", err)
	}
	defer l.Unlock()
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("the replaced lock file is %o, uid %d", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid)
	}
}

// The refusal names the process that really holds the lock (the kernel's
// list), not the number a holder wrote into the file.
func TestHeldNamesTheRealHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	os.WriteFile(path, nil, 0o600)
	cmd, out := holdAs(t, path, nil) // writes 99999 into the file
	if cmd == nil {
		t.Fatalf("flock(1): %s", out)
	}
	_, err := TryLock(path)
	var he *HeldError
	if !errors.As(err, &he) {
		t.Fatalf("TryLock while flock(1) holds it: %v", err)
	}
	if HolderPID(path) != 99999 {
		t.Fatalf("the holder did not write its forged number: %d", HolderPID(path))
	}
	// flock(1) holds the lock itself (the sh it runs is its child).
	if he.PID != cmd.Process.Pid {
		t.Fatalf("the refusal names process %d, the holder is %d (%v)", he.PID, cmd.Process.Pid, err)
	}
}
