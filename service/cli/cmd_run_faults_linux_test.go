package cli

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/testenv"
)

// TestRunHelperProcess is `strata-service run` as its own process, with
// main's signal handling, for the tests below.
func TestRunHelperProcess(t *testing.T) {
	args := os.Getenv("STRATA_RUN_HELPER_ARGS")
	if args == "" {
		t.Skip("a helper process for TestSIGHUPIsACleanStop")
	}
	ctx, stop := signal.NotifyContext(context.Background(), StopSignals...)
	code := Main(ctx, strings.Split(args, "\x1f"), strings.NewReader(""), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startRunProcess starts `strata-service run --foreground` as its own
// process against r and waits until its server is ready; it returns the
// process and the server's pid.
func startRunProcess(t *testing.T, r *fakestrata.Root, out *syncBuf) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunHelperProcess$")
	cmd.Env = append(os.Environ(), "STRATA_RUN_HELPER_ARGS="+strings.Join([]string{"run", "--foreground", "--strata-root", r.Dir, "--config", r.Config, "--stop-timeout", "5s"}, "\x1f"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := controlapi.NewClient(); err == nil {
			if st, err := c.State(context.Background()); err == nil && st.Server.Phase == controlapi.PhaseReady {
				return cmd, st.Server.PID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not get ready:\n%s", out.String())
		}
	}
}

// The reproduction: kill -9 of a foreground `run` whose server and
// engine ignore SIGTERM. Nothing of the server's tree may stay (it used to
// stay with PPID 1, holding the port), and the next `run` gets its server
// ready on the same port.
func TestKilledRunLeavesNothingAndTheNextRunStarts(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Mode: "ignore-term"})
	t.Setenv(locations.EnvHome, t.TempDir())
	out := &syncBuf{}
	cmd, pid := startRunProcess(t, r, out)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gone := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(-pid, 0) != nil {
			gone = true
			break
		}
	}
	if !gone {
		t.Fatalf("the server's process group %d outlived kill -9 of run", pid)
	}
	// The next run: ready on the same port (the stand-in binds it first and
	// would say "port in use").
	r.SetMode("")
	out2 := &syncBuf{}
	_, pid2 := startRunProcess(t, r, out2)
	if pid2 == pid || strings.Contains(out2.String(), "already in use") {
		t.Fatalf("the next run:\n%s", out2.String())
	}
}

// SIGHUP (the terminal of a foreground run closed) is a clean stop: the
// server's tree is stopped, the control files are removed, exit code 0.
// It used to end run at once, leaving control-addr and control-token.
func TestSIGHUPIsACleanStop(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	home := t.TempDir()
	t.Setenv(locations.EnvHome, home)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunHelperProcess$")
	cmd.Env = append(os.Environ(), "STRATA_RUN_HELPER_ARGS="+strings.Join([]string{"run", "--foreground", "--strata-root", r.Dir, "--config", r.Config, "--stop-timeout", "5s"}, "\x1f"))
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var st *controlapi.State
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := controlapi.NewClient(); err == nil {
			if st, err = c.State(context.Background()); err == nil && st.Server.Phase == controlapi.PhaseReady {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not get ready:\n%s", out.String())
		}
	}
	pid := st.Server.PID
	cmd.Process.Signal(syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after SIGHUP: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not end after SIGHUP:\n%s", out.String())
	}
	for _, f := range []string{locations.ControlAddrFile(), locations.ControlTokenFile()} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was left behind", f)
		}
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the server (pid %d) still runs", pid)
	}
	if !strings.Contains(out.String(), "stopped because the service is stopping") {
		t.Errorf("no clean stop in the output:\n%s", out.String())
	}
}

// `run` with its state folder on a full disk says the disk is full, and
// does not send root to an administrator.
func TestRunOnAFullStateFolderSaysTheDiskIsFull(t *testing.T) {
	disk := testenv.SmallDisk(t, 64<<10)
	t.Setenv(locations.EnvHome, disk)
	state, err := locations.EnsureDir(locations.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	locations.EnsureDir(locations.LogDir)
	testenv.Fill(t, disk)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	out := &syncBuf{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := Main(ctx, []string{"run", "--foreground", "--strata-root", r.Dir, "--config", r.Config}, strings.NewReader(""), out, out)
	if code == 0 {
		t.Fatalf("run on a full disk succeeded:\n%s", out.String())
	}
	msg := out.String()
	if !strings.Contains(msg, "the disk holding "+state+" is full") {
		t.Errorf("the message does not name the full disk (%s):\n%s", state, msg)
	}
	if strings.Contains(msg, "administrator") {
		t.Errorf("a full disk is answered with administrator advice:\n%s", msg)
	}
	if _, err := os.Stat(filepath.Join(state, "control-addr")); err == nil {
		t.Error("a control address was published although the token could not be")
	}
}

// `status` shows dropped log lines and why.
func TestStatusShowsDroppedLogLines(t *testing.T) {
	var b strings.Builder
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, LogDropped: 12, LogProblem: "the disk holding /var/log/strata-companion is full"}}
	printServiceStatus(&b, &serviceStatus{Running: true, State: st})
	if !strings.Contains(b.String(), "Log:        12 server output lines not written\n  the disk holding /var/log/strata-companion is full") {
		t.Fatalf("status:\n%s", b.String())
	}
}
