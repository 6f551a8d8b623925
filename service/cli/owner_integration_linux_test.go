package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/testenv"
)

const testAPIKey = "sk-strata-test-0123456789abcdef"

// accountCred is the credential of a throwaway account (its own group).
func accountCred(t *testing.T, u *testenv.User) *syscall.Credential {
	t.Helper()
	out, err := exec.Command("id", "-u", u.Name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	out, err = exec.Command("id", "-g", u.Name).Output()
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// chownTree gives dir and everything in it to cred's account, and lets
// everyone through the folders above it (as a home folder would).
func chownTree(t *testing.T, dir string, cred *syscall.Credential) {
	t.Helper()
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
	testenv.OpenPath(t, filepath.Dir(dir))
}

// uidOf is the real uid of a running process.
func uidOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return -1
}

// readyServer waits until the state says Strata's server is ready with a
// process other than not (a restart is over), and returns that state.
func readyServer(t *testing.T, c *controlapi.Client, out *syncBuf, not int) *controlapi.State {
	t.Helper()
	var st *controlapi.State
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := c.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st = s; st.Server.Phase == controlapi.PhaseReady && st.Server.PID > 0 && st.Server.PID != not {
			return st
		}
		if time.Now().After(deadline) {
			all, _ := c.Events(context.Background(), 0, 0)
			t.Fatalf("Strata's server is not ready with a new process (state %+v); the events: %+v\n%s", st.Server, all, out)
		}
	}
}

// The check: a root service over an install owned by account A.
// Account B (neither the owner nor an administrator) changes nothing
// through the CLI or the API with any credential it can read, and cannot
// hold the locks; A switches vision through the CLI, and the service writes
// the config (an inotify watch sees it replaced) keeping it A's; Strata's
// server runs as A, not root; no diff, from the API or the CLI, shows the
// api_key.
func TestOnlyTheOwnerChangesThroughARootService(t *testing.T) {
	testenv.Root(t)
	ua, ub := testenv.NewUser(t), testenv.NewUser(t)
	a, b := accountCred(t, ua), accountCred(t, ub)
	r := visionRoot(t)
	// The api_key right above the vision block: a vision change's diff
	// has it among its context lines.
	raw, _ := os.ReadFile(r.Config)
	cfgMap := map[string]any{}
	json.Unmarshal(raw, &cfgMap)
	enc, _ := cfgMap["vision"].(map[string]any)["exe"].(string)
	raw = bytes.Replace(raw, []byte(`  "vision": {`), []byte(`  "api_key": "`+testAPIKey+`",`+"\n"+`  "vision": {`), 1)
	os.WriteFile(r.Config, raw, 0o600)
	chownTree(t, r.Dir, a)
	chownTree(t, filepath.Dir(enc), a)

	c, out := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	st := readyServer(t, c, out, 0)
	if uid := uidOf(t, st.Server.PID); uid != int(a.Uid) {
		t.Fatalf("Strata's server runs as uid %d, want the install's owner %s (%d):\n%s", uid, ua.Name, a.Uid, out)
	}

	// A copy of this binary both accounts may run, and the service's
	// folders they may read (as /etc and /var/lib are).
	binDir := t.TempDir()
	self, _ := os.Executable()
	bin := filepath.Join(binDir, "strata-service.test")
	testenv.Copy(t, self, bin, 0o755)
	home := os.Getenv(locations.EnvHome)
	for _, d := range []string{binDir, filepath.Dir(binDir), home, filepath.Dir(home), locations.Path(locations.StateDir)} {
		os.Chmod(d, 0o755)
	}
	cli := func(cred *syscall.Credential, u *testenv.User, args ...string) (string, error) {
		cmd, out := childCLI(t, bin, cred, args...)
		cmd.Env = append(cmd.Env, "HOME="+u.Home)
		err := cmd.Run()
		return out.String(), err
	}
	canRead := func(cred *syscall.Credential, path string) ([]byte, bool) {
		cmd := exec.Command("cat", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		o, err := cmd.Output()
		return o, err == nil
	}
	cfgBefore, _ := os.ReadFile(r.Config)
	setBefore, _ := os.ReadFile(locations.SettingsFile())

	// B through the CLI: refused, saying who may; nothing written.
	for _, args := range [][]string{
		{"vision", "cpu", "--yes"},
		{"vision", "off", "--yes"},
		{"vision", "gpu", "--dry-run"},
		{"settings", "--fallback-cpu", "on"},
	} {
		o, err := cli(b, ub, args...)
		if err == nil || !strings.Contains(o, ua.Name) || !strings.Contains(o, "administrators") {
			t.Errorf("%s as %s (neither owner nor administrator): %v\n%s", strings.Join(args, " "), ub.Name, err, o)
		}
	}
	// B through the API, with every token file it can read.
	var tokens []string
	for _, f := range []string{locations.ControlTokenFile(), locations.ControlOperatorTokenFile(), locations.RelayTokenFile()} {
		if tok, ok := canRead(b, f); ok {
			tokens = append(tokens, strings.TrimSpace(string(tok)))
		} else if f == locations.ControlTokenFile() {
			t.Fatalf("%s cannot read the read token %s", ub.Name, f)
		}
	}
	if len(tokens) != 1 {
		t.Fatalf("%s can read %d tokens, want the read token alone", ub.Name, len(tokens))
	}
	for _, tok := range tokens {
		bc := *c
		bc.Token = tok
		if _, err := bc.State(ctx); err != nil {
			t.Fatalf("%s cannot read the state: %v", ub.Name, err)
		}
		var se *controlapi.StatusError
		if _, err := bc.SetVision(ctx, controlapi.VisionRequest{Placement: "cpu"}); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's POST /v1/vision: %v", err)
		}
		if _, err := bc.SetVision(ctx, controlapi.VisionRequest{Placement: "remote", Host: "pc2.lan", DryRun: true}); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's dry run: %v", err)
		}
		yes := true
		if _, err := bc.PatchSettings(ctx, controlapi.SettingsPatch{FallbackCPU: &yes}); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's POST /v1/settings: %v", err)
		}
		if err := bc.Server(ctx, "restart"); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's restart: %v", err)
		}
		forged := controlapi.RelayReport{Events: []events.Event{events.New("", events.RemoteConnectedDetails{Host: "pc2\nforged line"})}}
		if err := bc.ReportRelay(ctx, forged); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's relay report: %v", err)
		}
		if _, err := bc.Logs(ctx, 10); !errors.As(err, &se) || se.Code != 403 {
			t.Errorf("B's GET /v1/logs: %v", err)
		}
		for _, p := range []string{"/v1/config", "/v1/remote"} {
			req, _ := http.NewRequest("POST", c.BaseURL+p, strings.NewReader(`{"config":"x","unpair":true}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
				t.Errorf("B's POST %s: %v %v", p, resp, err)
			} else {
				resp.Body.Close()
			}
		}
	}
	// B cannot hold the locks (flock needs the file open).
	for _, l := range []string{filepath.Join(locations.Path(locations.StateDir), "service.lock"), locations.SettingsFile() + ".lock"} {
		cmd := exec.Command("flock", "-n", l, "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b}
		if o, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("%s could lock %s", ub.Name, l)
		} else if _, statErr := os.Stat(l); statErr == nil && !strings.Contains(string(o), "Permission denied") {
			t.Errorf("flock %s as %s: %s", l, ub.Name, o)
		}
	}
	if cfg, _ := os.ReadFile(r.Config); !bytes.Equal(cfg, cfgBefore) {
		t.Fatal("B changed the config")
	}
	if s, _ := os.ReadFile(locations.SettingsFile()); !bytes.Equal(s, setBefore) {
		t.Fatal("B changed the settings")
	}

	// A: the operator token is A's to read, and A switches vision.
	if _, ok := canRead(a, locations.ControlOperatorTokenFile()); !ok {
		t.Fatalf("the owner %s cannot read the operator token", ua.Name)
	}
	o, err := cli(a, ua, "vision", "cpu", "--dry-run")
	if err != nil || !strings.Contains(o, `"api_key": "`+strataconfig.Redacted+`"`) || strings.Contains(o, testAPIKey) {
		t.Fatalf("A's dry run (it must show the diff, with api_key redacted): %v\n%s", err, o)
	}
	resp, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: "cpu", DryRun: true})
	if err != nil || !strings.Contains(resp.Diff, `"api_key"`) || strings.Contains(resp.Diff, testAPIKey) {
		t.Fatalf("the API's dry run: %v\n%+v", err, resp)
	}
	watch := watchDir(t, r.Dir)
	for _, pl := range []string{"cpu", "gpu"} {
		o, err := cli(a, ua, "vision", pl, "--yes")
		if err != nil || strings.Contains(o, testAPIKey) {
			t.Fatalf("vision %s as the owner: %v\n%s", pl, err, o)
		}
		p, err := agreement(ctx, c, r.Config)
		if err != nil || p != pl {
			t.Fatalf("after vision %s: %s %v\n%s", pl, p, err, o)
		}
		// Both moves (from the GPU, then back to it) restart Strata: the
		// next change waits until this one's server is up.
		st = readyServer(t, c, out, st.Server.PID)
	}
	if writes := watch(); !contains(writes, filepath.Base(r.Config)) {
		t.Fatalf("the inotify watch saw no replacement of the config: %v", writes)
	}
	stc, _ := os.Stat(r.Config)
	if uid := stc.Sys().(*syscall.Stat_t).Uid; uid != a.Uid {
		t.Fatalf("the config is uid %d's after the service's change, want the owner's %d", uid, a.Uid)
	}
	sts, _ := os.Stat(locations.SettingsFile())
	if uid := sts.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Fatalf("the settings were written by uid %d, not the service", uid)
	}
	// The restarted server is A's too.
	if uid := uidOf(t, st.Server.PID); uid != int(a.Uid) {
		t.Fatalf("after the restart Strata's server runs as uid %d", uid)
	}
	if strings.Contains(out.String(), testAPIKey) {
		t.Fatal("the service's output shows the api_key")
	}
}

// nobodyAttr runs a command as nobody.
func nobodyAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
