package supervisor

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/strataconfig"
)

const envForeignListen = "STRATA_TEST_FOREIGN_LISTEN"

// TestForeignListenHelper listens on the address it is told (as another
// account) until its stdin closes.
func TestForeignListenHelper(t *testing.T) {
	addr := os.Getenv(envForeignListen)
	if addr == "" {
		t.Skip("run by TestNotReadyWhileAnotherAccountHoldsThePort")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Stdout.WriteString("LISTENING\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// Issue 32, Low: another account holding Strata's port during a restart
// (on ::1, beside Strata's 127.0.0.1) was not seen: Strata was reported
// ready and clients sent the api_key to whichever answered. Now the
// service names the other account and its program and does not report
// Strata ready until that one is gone.
func TestNotReadyWhileAnotherAccountHoldsThePort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: another account's listener")
	}
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback here")
	} else {
		l.Close()
	}
	var stop func()
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) {
		sc, err := strataconfig.Read(c.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(sc.Port())
		self, _ := os.Executable()
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		os.Chmod(filepath.Dir(dir), 0o755)
		bin := filepath.Join(dir, "supervisor.test")
		b, _ := os.ReadFile(self)
		os.WriteFile(bin, b, 0o755)
		cmd := exec.Command(bin, "-test.run=^TestForeignListenHelper$", "-test.v")
		cmd.Env = append(os.Environ(), envForeignListen+"=[::1]:"+port)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		in, _ := cmd.StdinPipe()
		outp, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop = func() { in.Close(); cmd.Wait() }
		t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
		rd := bufio.NewReader(outp)
		for {
			line, err := rd.ReadString('\n')
			if strings.Contains(line, "LISTENING") {
				break
			}
			if err != nil {
				t.Fatalf("the other account's listener did not start: %q", line)
			}
		}
	})
	f := h.waitFor(events.ServerForeign)
	if !strings.Contains(f.Message, "nobody") || !strings.Contains(f.Message, "supervisor.test") || !strings.Contains(f.Message, "not reported ready") {
		t.Errorf("the foreign event: %q", f.Message)
	}
	if n := h.count(events.ServerReady); n != 0 {
		t.Fatalf("Strata was reported ready %d times while another account held its port", n)
	}
	stop()
	h.waitFor(events.ServerReady)
}
