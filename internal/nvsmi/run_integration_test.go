//go:build !windows

package nvsmi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

// standIn writes an nvidia-smi shell script (the probe's way of standing in
// for a driver it cannot have) into a fresh folder and returns its path.
func standIn(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := testenv.WriteExecutable(p, []byte("#!/bin/sh\n"+body)); err != nil {
		t.Fatal(err)
	}
	return p
}

// pidIn reads a pid the stand-in wrote beside itself, waiting for it.
func pidIn(t *testing.T, dir, name string) int {
	t.Helper()
	var pid int
	testenv.WaitFor(t, 10*time.Second, "the stand-in writes "+name, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// gone says pid no longer runs (gone, or a zombie no one reaped yet).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// within runs f and fails the test if it does not return within 20 s
// ("at once" against "never"); it logs how long it took.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	t0 := time.Now()
	go func() { defer close(done); f() }()
	select {
	case <-done:
		t.Logf("%s returned after %s", what, time.Since(t0).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return: the bound did not hold", what)
	}
}

// TestLocalHungIsKilled: an nvidia-smi that never answers, with a child of
// its own, is killed with that child at the timeout, and the caller gets a
// timeout that Query names.
func TestLocalHungIsKilled(t *testing.T) {
	p := standIn(t, `sleep 300 &
echo $! > "$(dirname "$0")/child.pid"
echo $$ > "$(dirname "$0")/self.pid"
wait
`)
	var res Result
	within(t, "Query on a hung nvidia-smi", func() {
		res = Query(context.Background(), Local(p, 2*time.Second), p, true)
	})
	if res.Err == nil || res.Err.Kind != Timeout {
		t.Fatalf("result %+v, want a timeout", res)
	}
	if _, what, _ := res.Err.Explain(); !strings.Contains(what, "did not answer in time") {
		t.Errorf("words %q", what)
	}
	for _, f := range []string{"self.pid", "child.pid"} {
		pid := pidIn(t, filepath.Dir(p), f)
		testenv.WaitFor(t, 10*time.Second, f+" ends", func() bool { return gone(pid) })
	}
}

// TestLocalPipeHeldElsewhere: a program nvidia-smi left behind in another
// session, which the kill cannot reach, holds its output open: the caller
// still returns (the wait is bounded, not the process).
func TestLocalPipeHeldElsewhere(t *testing.T) {
	p := standIn(t, `setsid sleep 300 &
echo $! > "$(dirname "$0")/held.pid"
sleep 300
`)
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(p), "held.pid")); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	var err error
	within(t, "Local with its output held open", func() {
		_, err = Local(p, 300*time.Millisecond)(context.Background(), strings.Fields(QueryArgs))
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a timeout", err)
	}
}

// TestLocalNonZeroExit: a driver error printed with a non-zero exit is
// named; good lines printed with a non-zero exit are kept.
func TestLocalNonZeroExit(t *testing.T) {
	p := standIn(t, `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." ; exit 9`)
	res := Query(context.Background(), Local(p, 5*time.Second), p, true)
	if res.Err == nil || res.Err.Kind != Driver || res.Err.Where != p {
		t.Fatalf("result %+v", res)
	}
	p = standIn(t, `case "$*" in *mig.mode*) echo "0, Disabled"; exit 0 ;; esac
echo "Unable to determine the device handle for GPU0000:02:00.0: GPU is lost." >&2
echo "0, NVIDIA GeForce RTX 3090, 24576, 300, 23964, 575.57.08, 8.6, Enabled"
exit 15`)
	res = Query(context.Background(), Local(p, 5*time.Second), p, true)
	if res.Err != nil || len(res.GPUs) != 1 || res.GPUs[0].FreeMiB != 23964 || len(res.Skipped) != 1 || res.GPUs[0].MIG != MIGDisabled {
		t.Fatalf("result %+v", res)
	}
}

// TestMissing: no nvidia-smi is a clear finding, not an error that stops
// anything.
func TestMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nvidia-smi")
	if c := Candidates(missing, nil, nil); len(c) != 0 {
		t.Fatalf("candidates %q", c)
	}
	empty := t.TempDir()
	lookNone := func(string) (string, error) { return "", errors.New("not on PATH") }
	if c := Candidates("", lookNone, []string{filepath.Join(empty, "nvidia-smi"), empty}); len(c) != 0 {
		t.Fatalf("candidates %q (a folder is not a program)", c)
	}
	res := Query(context.Background(), Local(missing, time.Second), "", true)
	if res.Err == nil || res.Err.Kind != NotFound {
		t.Fatalf("result %+v", res)
	}
	sev, what, fix := res.Err.Explain()
	if sev != SeverityInfo || !strings.Contains(what, "nvidia-smi was not found") || !strings.Contains(fix, "install the NVIDIA driver") {
		t.Errorf("%s: %q / %q", sev, what, fix)
	}
	w := NewWatcher(missing, time.Second)
	r, fresh := w.Read(time.Time{}, 10*time.Second)
	if !fresh || r.Err == nil || r.Err.Kind != NotFound {
		t.Fatalf("watcher %+v fresh %v", r, fresh)
	}
}

// TestCandidatesOrder: the override alone; else PATH, then the drivers'
// places, each once.
func TestCandidatesOrder(t *testing.T) {
	a, b := standIn(t, "exit 0"), standIn(t, "exit 0")
	look := func(string) (string, error) { return a, nil }
	if c := Candidates("", look, []string{b, a}); len(c) != 2 || c[0] != a || c[1] != b {
		t.Fatalf("candidates %q", c)
	}
	if c := Candidates(b, look, []string{a}); len(c) != 1 || c[0] != b {
		t.Fatalf("override: candidates %q", c)
	}
}

// TestWatcherBoundsAHang: a hung nvidia-smi costs a reader at most its
// wait; a second reader joins the run in flight instead of starting
// another; the hang is killed at the watcher's timeout, and a reading
// after it says so.
func TestWatcherBoundsAHang(t *testing.T) {
	p := standIn(t, `echo x >> "$(dirname "$0")/starts"
echo $$ > "$(dirname "$0")/self.pid"
sleep 300
`)
	w := NewWatcher(p, 2*time.Second)
	var r Reading
	var fresh bool
	within(t, "Read with a 100 ms wait", func() { r, fresh = w.Read(time.Time{}, 100*time.Millisecond) })
	if fresh || r.Err == nil || r.Err.Kind != Timeout || !r.At.IsZero() {
		t.Fatalf("reading %+v: want none yet", r)
	}
	if _, f := w.Read(time.Time{}, 100*time.Millisecond); f {
		t.Fatal("a second read while the first hangs was fresh")
	}
	pid := pidIn(t, filepath.Dir(p), "self.pid")
	testenv.WaitFor(t, 15*time.Second, "the hung nvidia-smi is killed", func() bool { return gone(pid) })
	var last Reading
	testenv.WaitFor(t, 15*time.Second, "the reading records the timeout", func() bool {
		last = w.Last()
		return !last.At.IsZero()
	})
	if last.Err == nil || last.Err.Kind != Timeout {
		t.Fatalf("last reading %+v", last)
	}
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "starts"))
	if n := strings.Count(string(b), "x"); n != 1 {
		t.Errorf("nvidia-smi started %d times while one run hung; want 1", n)
	}
}

// TestWatcherSince: a reading asked for after a moment is begun after it
// (an encoder's VRAM is measured after its start, not by a run begun
// before).
func TestWatcherSince(t *testing.T) {
	p := standIn(t, `case "$*" in *mig.mode*) echo "0, Enabled"; exit 0 ;; esac
echo x >> "$(dirname "$0")/starts"
echo "0, A100, 81920, $(wc -l < "$(dirname "$0")/starts"), 1, 580.1, 8.0, Disabled"
`)
	w := NewWatcher(p, 5*time.Second)
	r1, fresh := w.Read(time.Time{}, 15*time.Second)
	if !fresh || len(r1.GPUs) != 1 || r1.GPUs[0].UsedMiB != 1 || !r1.GPUs[0].Partitioned() {
		t.Fatalf("first reading %+v", r1)
	}
	mark := time.Now()
	r2, fresh := w.Read(mark, 15*time.Second)
	if !fresh || r2.At.Before(mark) || r2.GPUs[0].UsedMiB != 2 || !r2.GPUs[0].Partitioned() {
		t.Fatalf("second reading %+v (MIG is asked once and kept)", r2)
	}
}
