package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/testenv"
)

// container is a real systemd booted by systemd-nspawn on this machine's own
// file system (volatile: nothing it writes survives).
type container struct {
	t    *testing.T
	cmd  *exec.Cmd
	pid  int // the container's systemd, as seen from here
	name string
}

func bootSystemd(t *testing.T, binds ...string) *container {
	t.Helper()
	name := fmt.Sprintf("sctest-%d", os.Getpid())
	args := []string{"-D", "/", "--volatile=yes", "-b", "-M", name, "--register=no", "--keep-unit", "--console=passive"}
	args = append(args, binds...)
	args = append(args, "--", "systemd.firstboot=off")
	cmd := exec.Command("systemd-nspawn", args...)
	logf, _ := os.Create(filepath.Join(t.TempDir(), "nspawn.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		testenv.Skip(t, "systemd-nspawn does not start: "+err.Error())
	}
	c := &container{t: t, cmd: cmd, name: name}
	t.Cleanup(c.shutdown)
	deadline := time.Now().Add(60 * time.Second)
	for c.pid == 0 {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			testenv.Skip(t, "no systemd came up in systemd-nspawn:\n"+string(b))
		}
		for _, p := range childrenOf(cmd.Process.Pid) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(b)) == "systemd" {
				c.pid = p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		out, _ := c.exec("systemctl", "is-system-running")
		if s := strings.TrimSpace(out); s == "running" || s == "degraded" {
			return c
		}
		if time.Now().After(deadline) {
			testenv.Skip(t, "the container's systemd did not finish booting: "+out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func childrenOf(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// exec runs a command inside the container.
func (c *container) exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(c.pid), "-a"}, args...)...).CombinedOutput()
	return string(out), err
}

func (c *container) shutdown() {
	c.exec("systemctl", "poweroff")
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		testenv.KillTree(c.cmd.Process.Pid)
		<-done
	}
}

// buildService builds strata-service for the container.
func buildService(t *testing.T) string {
	t.Helper()
	return testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
}

// install / start / status / stop / uninstall against a real systemd.
func TestSystemdService(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a systemd container")
	}
	testenv.Root(t)
	testenv.LookPath(t, "systemd-nspawn", "nsenter")
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		testenv.Skip(t, "systemd is not installed (apt-get install systemd systemd-container)")
	}
	bin := buildService(t)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Step: "50ms"})
	standin := fakestrata.Build(t)
	c := bootSystemd(t,
		"--bind-ro="+filepath.Dir(bin)+":/opt/strata-companion",
		"--bind-ro="+filepath.Dir(standin),
		"--bind="+r.Dir)
	svc := "/opt/strata-companion/strata-service"
	run := func(want bool, args ...string) string {
		t.Helper()
		out, err := c.exec(append([]string{svc}, args...)...)
		if (err == nil) != want {
			t.Fatalf("strata-service %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	out := run(true, "install", "--strata-root", r.Dir, "--config", r.Config)
	if !strings.Contains(out, "linux-systemd") {
		t.Errorf("install did not use systemd: %s", out)
	}
	unit, _ := c.exec("cat", "/etc/systemd/system/strata-companion.service")
	for _, want := range []string{"LimitMEMLOCK=infinity", "Restart=on-failure", "KillMode=mixed",
		"ExecStart=" + svc + ` "run"` + "\n", "WorkingDirectory=/\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q:\n%s", want, unit)
		}
	}
	// The settings, not the command line, say which config runs.
	if b, _ := c.exec("cat", "/etc/strata-companion/settings.json"); !strings.Contains(b, `"config_path": "`+r.Config+`"`) {
		t.Errorf("install did not record the config in the settings:\n%s", b)
	}
	if out := run(false, "install"); !strings.Contains(out, "already installed") {
		t.Errorf("a second install: %s", out)
	}
	run(true, "start")
	if out, _ := c.exec("systemctl", "is-active", "strata-companion"); strings.TrimSpace(out) != "active" {
		t.Fatalf("is-active after start: %s", out)
	}

	// status goes through the control API the service publishes.
	var st struct {
		Service *serviceStatus `json:"service"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, _ := c.exec(svc, "status", "--json", "--strata-root", r.Dir, "--config", r.Config)
		st.Service = nil
		json.Unmarshal([]byte(out), &st)
		if st.Service != nil && st.Service.State != nil && st.Service.State.Server.Phase == "ready" {
			break
		}
		if time.Now().After(deadline) {
			j, _ := c.exec("journalctl", "-u", "strata-companion", "--no-pager")
			t.Fatalf("the server did not get ready under systemd:\n%s\n%s", out, j)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !st.Service.Installed || !st.Service.Running || st.Service.Manager != "linux-systemd" {
		t.Errorf("service status %+v", st.Service)
	}
	// systemd took the memlock setting; it reaches Strata where the machine
	// allows raising the limit (CAP_SYS_RESOURCE in the bounding set: this
	// build machine's container lacks it, so nobody here can go past 8 MiB).
	if out, _ := c.exec("systemctl", "show", "-p", "LimitMEMLOCK", "strata-companion"); strings.TrimSpace(out) != "LimitMEMLOCK=infinity" {
		t.Errorf("systemd's memlock setting: %s", out)
	}
	limits, _ := c.exec("cat", fmt.Sprintf("/proc/%d/limits", st.Service.State.Server.PID))
	if hasCapSysResource() {
		if !regexpMatch(`Max locked memory\s+unlimited\s+unlimited`, limits) {
			t.Errorf("Strata's memlock limit:\n%s", limits)
		}
	} else {
		t.Log("CAP_SYS_RESOURCE is not in this machine's bounding set: the memlock limit cannot be raised here; checked the unit's setting only")
	}
	human := run(true, "status", "--strata-root", r.Dir, "--config", r.Config)
	if !strings.Contains(human, "Service:    installed, running (systemd)") || !strings.Contains(human, "Server:     ready at http://127.0.0.1:") {
		t.Errorf("status:\n%s", human)
	}

	run(true, "stop")
	if out, _ := c.exec("systemctl", "is-active", "strata-companion"); strings.TrimSpace(out) != "inactive" {
		t.Errorf("is-active after stop: %s", out)
	}
	if out, err := c.exec("pgrep", "-f", "strata-standin"); err == nil {
		t.Errorf("Strata processes outlived the service: %s", out)
	}
	run(true, "uninstall")
	if _, err := c.exec("test", "-e", "/etc/systemd/system/strata-companion.service"); err == nil {
		t.Error("the unit file is still there")
	}
	if out := run(false, "uninstall"); !strings.Contains(out, "not installed") {
		t.Errorf("a second uninstall: %s", out)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// hasCapSysResource reports whether CAP_SYS_RESOURCE (24) is in this
// process's bounding set: without it no one can raise RLIMIT_MEMLOCK.
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<24) != 0
		}
	}
	return false
}
