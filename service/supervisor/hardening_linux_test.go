package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/testenv"
)

// With the log folder full, the server's lines cannot be written: each is
// counted, the first drop is published at once with the real cause, and
// when writing works again the recovery is published with the total.
func TestDroppedLogLinesAreCountedAndShown(t *testing.T) {
	disk := testenv.SmallDisk(t, 64<<10)
	testenv.Fill(t, disk)
	logFile := filepath.Join(disk, "strata-server.log")
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { c.LogFile = logFile })
	e := h.waitFor(events.ServerLogDropped)
	if d := events.Get[events.ServerLogDroppedDetails](e); d.Writing || d.Dropped < 1 {
		t.Fatalf("first drop event: %+v", e)
	}
	if !strings.Contains(e.Message, "the disk holding "+disk+" is full") || !strings.Contains(e.Message, logFile) {
		t.Fatalf("the event does not name the full disk and the file: %q", e.Message)
	}
	h.waitFor(events.ServerReady)
	testenv.WaitFor(t, 20*time.Second, "every startup line counted as dropped (3 or more)", func() bool { return h.sup.Dropped() >= 3 })
	if len(h.sup.LastLines()) == 0 {
		t.Fatal("the in-memory tail lost the lines too")
	}
	// Free the disk: the next line is written and the recovery says so.
	if err := os.Remove(filepath.Join(disk, ".fill")); err != nil {
		t.Fatal(err)
	}
	before := h.sup.Dropped()
	h.sup.Restart(context.Background())
	e = h.waitFor(events.ServerLogDropped)
	if d := events.Get[events.ServerLogDroppedDetails](e); !d.Writing || d.Dropped != before {
		t.Fatalf("recovery event: %+v (dropped before %d)", e, before)
	}
	h.waitFor(events.ServerReady)
	testenv.WaitFor(t, 20*time.Second, "the ready line in the log after the disk was freed", func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "ready:")
	})
}

// A supervisor killed with SIGKILL while its server ignores SIGTERM leaves
// nothing running: the server's parent-death SIGKILL and the guard end the
// whole group (server and engine).
func TestKilledSupervisorLeavesNothingRunning(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Mode: "ignore-term"})
	pidFile := filepath.Join(t.TempDir(), "strata-server.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisor$")
	cmd.Env = append(os.Environ(), "STRATA_TEST_HELPER_SUPERVISOR="+strings.Join([]string{r.Dir, r.Config, pidFile}, "\n"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "READY-PID "); ok {
			pid, _ = strconv.Atoi(v)
			break
		}
	}
	if pid == 0 {
		t.Fatal("the helper supervisor did not report a ready server")
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	if n := len(alive(pid)); n < 2 {
		t.Fatalf("want the server and its engine in group %d, have %v", pid, alive(pid))
	}
	if rec, err := readPID(pidFile); err != nil || rec.PID != pid {
		t.Fatalf("pid file: %+v %v", rec, err)
	}
	t.Logf("before kill: %v", alive(pid))
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(20 * time.Second) // a bound, not a timing check
	for len(alive(pid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("group gone %v after the kill (polled every 5 ms)", time.Since(t0))
	if left := alive(pid); len(left) > 0 {
		var names []string
		for _, p := range left {
			c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			names = append(names, fmt.Sprintf("%d %q", p, strings.ReplaceAll(string(c), "\x00", " ")))
		}
		t.Fatalf("left running after kill -9 of the supervisor: %v", names)
	}
}

// TestHelperSupervisor is the supervisor process the test above kills.
func TestHelperSupervisor(t *testing.T) {
	v := os.Getenv("STRATA_TEST_HELPER_SUPERVISOR")
	if v == "" {
		t.Skip("a helper process for TestKilledSupervisorLeavesNothingRunning")
	}
	f := strings.Split(v, "\n")
	bus := events.NewBus(100)
	sup, err := New(Config{StrataRoot: f[0], ConfigPath: f[1], PIDFile: f[2], Events: bus, HealthEvery: 100 * time.Millisecond, FollowEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go sup.Run(context.Background())
	var since uint64
	for {
		evs, _, _ := bus.Wait(context.Background(), since)
		for _, e := range evs {
			since = e.Seq
			if e.Kind == events.ServerReady {
				fmt.Printf("READY-PID %d\n", events.Get[events.ServerReadyDetails](e).PID)
			}
		}
	}
}

// startLeftover starts a stand-in server (and engine) in its own group, as
// a killed supervisor would leave it: ignoring SIGTERM, holding its port,
// with mark in its environment. It returns the pid file record.
func startLeftover(t *testing.T, old *fakestrata.Root, mark string) pidRecord {
	t.Helper()
	cmd := exec.Command(old.Python, "serve/server.py", "--engine", "strata", "--config", old.Config, "--port", strconv.Itoa(old.Port))
	cmd.Dir = old.Dir
	cmd.Env = append(os.Environ(), EnvServerMark+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "ready:") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if len(alive(pid)) < 2 {
		t.Fatalf("the left-behind server and engine are not running: %v", alive(pid))
	}
	start, _ := procStart(pid)
	return pidRecord{PID: pid, PGID: pid, Start: start, Port: old.Port, Cmd: strings.Join(cmd.Args, " "), Mark: mark}
}

func writeRecord(t *testing.T, rec pidRecord) string {
	pidFile := filepath.Join(t.TempDir(), "strata-server.pid")
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(pidFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return pidFile
}

// A server an earlier run left behind (here: started by the test, recorded
// in the pid file, ignoring SIGTERM and holding the port) is found, named
// in an event and ended; the new server then starts on that port instead of
// failing with "port in use".
func TestLeftoverServerIsFoundNamedAndEnded(t *testing.T) {
	old := fakestrata.NewRoot(t, fakestrata.RootOptions{Mode: "ignore-term"})
	rec := startLeftover(t, old, "earlier-run")
	pid := rec.PID
	pidFile := writeRecord(t, rec)

	h := newHarness(t, fakestrata.RootOptions{Port: old.Port}, func(c *Config) {
		c.PIDFile = pidFile
		c.StopTimeout = 300 * time.Millisecond
	})
	e := h.waitFor(events.ServerProgress)
	for events.Get[events.ServerProgressDetails](e).LeftoverPID == 0 {
		e = h.waitFor(events.ServerProgress)
	}
	if events.Get[events.ServerProgressDetails](e).LeftoverPID != pid || !strings.Contains(e.Message, "left behind by an earlier run") || !strings.Contains(e.Message, strconv.Itoa(old.Port)) {
		t.Fatalf("the leftover is not named: %+v", e)
	}
	ready := h.waitFor(events.ServerReady)
	if left := alive(pid); len(left) > 0 {
		t.Fatalf("the left-behind group still runs: %v", left)
	}
	if h.count(events.ServerFailed) > 0 {
		t.Fatalf("failed: %v", h.kinds())
	}
	if rec, err := readPID(pidFile); err != nil || rec.PID != pidOf(t, ready) || rec.Mark == "" {
		t.Fatalf("the pid file does not name the new server: %+v %v", rec, err)
	}
}

// A pid file whose group now holds processes without the recorded mark (the
// numbers were reused by someone else) is not acted on: nothing is ended.
func TestPidFileDoesNotEndAnotherProgram(t *testing.T) {
	other := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	rec := startLeftover(t, other, "someone-else")
	rec.Mark = "our-earlier-run"
	pidFile := writeRecord(t, rec)
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { c.PIDFile = pidFile })
	h.waitFor(events.ServerReady)
	if len(alive(rec.PID)) < 2 {
		t.Fatalf("another program's processes were ended: %v left", alive(rec.PID))
	}
	for _, e := range h.seen {
		if events.Get[events.ServerProgressDetails](e).LeftoverPID != 0 {
			t.Fatalf("another program was taken for a leftover: %+v", e)
		}
	}
}

// stalledWriter is a terminal paused with Ctrl-S: every Write blocks until
// release.
type stalledWriter struct{ release chan struct{} }

func (w stalledWriter) Write(p []byte) (int, error) { <-w.release; return len(p), nil }

// A stalled terminal and a stalled disk (the log file is a FIFO no one
// reads, so opening it for writing blocks) stall neither the pipe readers
// nor the decision loop: the server still gets ready (its lines are read
// and parsed), Stop and Start are answered and the server stops and
// starts, and the tail in memory has the lines.
func TestStalledConsoleAndDiskStallNothing(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "strata-server.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	console := stalledWriter{release: make(chan struct{})}
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { c.LogFile, c.Console = fifo, console })
	t.Cleanup(func() {
		// Unblock the writers so they end with Run: release the console,
		// and read the FIFO (its open for writing then returns).
		close(console.release)
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			go func() { io.Copy(io.Discard, f); f.Close() }()
		}
	})
	h.waitFor(events.ServerReady)
	if !strings.Contains(strings.Join(h.sup.LastLines(), "\n"), "ready:") {
		t.Fatalf("the tail lacks the ready line: %q", h.sup.LastLines())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.sup.Stop(ctx); err != nil {
		t.Fatalf("Stop with a stalled console and disk: %v", err)
	}
	h.waitFor(events.ServerStopped)
	if err := h.sup.Start(ctx); err != nil {
		t.Fatalf("Start with a stalled console and disk: %v", err)
	}
	h.waitFor(events.ServerReady)
}
