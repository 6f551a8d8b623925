// Package testenv helps integration tests that need real programs (sshd,
// Xvfb, dbus, systemd-nspawn, ip). Locally a missing program skips the test;
// with STRATA_TEST_STRICT=1 (set by `make test` in CI) it fails it, so CI can
// never pass by silently skipping the real thing.
package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Strict reports whether missing prerequisites must fail tests.
func Strict() bool { return os.Getenv("STRATA_TEST_STRICT") == "1" }

// Skip skips (or, in strict mode, fails) t with the reason.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Strict() {
		t.Fatalf("prerequisite missing in strict mode: %s", reason)
	}
	t.Skip(reason)
}

// LookPath finds each program on PATH (or in /usr/sbin, where sshd lives) and
// returns their paths in order, skipping t when one is missing.
func LookPath(t testing.TB, programs ...string) []string {
	t.Helper()
	var out []string
	for _, p := range programs {
		path, err := exec.LookPath(p)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
				if _, statErr := os.Stat(dir + "/" + p); statErr == nil {
					path, err = dir+"/"+p, nil
					break
				}
			}
		}
		if err != nil {
			Skip(t, p+" is not installed (run scripts/install-deps.sh)")
		}
		out = append(out, path)
	}
	return out
}

// Root skips t unless it runs as root (network namespaces, systemd-nspawn).
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root")
	}
}

// WriteExecutable is os.WriteFile(path, data, 0o755) for a program a test
// will run (a script, a copied binary), under syscall.ForkLock: a parallel
// test's fork between the open and the close would carry the write
// descriptor into its child until that child execs, and running the program
// in that window fails with "text file busy" (golang.org/issue/22315).
func WriteExecutable(path string, data []byte) error {
	return writeUnderForkLock(path, data, 0o755)
}

func writeUnderForkLock(path string, data []byte, mode os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, mode)
}

// WaitFor checks cond every few milliseconds until it holds, and fails t
// (naming what it waited for) when it does not within the deadline: the
// wait on a condition where there is no event to wait on, so that a
// regression fails in seconds instead of hanging until the test binary's
// timeout. A test never sleeps in its place.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Receive waits up to within for a value on ch, and fails t (naming what)
// when none comes.
func Receive[T any](t testing.TB, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("waited %s for %s", within, what)
		panic("unreachable")
	}
}

// Buffer is a bytes.Buffer that goroutines may write while a test reads it
// (a program's output, a daemon's log).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *Buffer) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }
