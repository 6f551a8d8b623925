//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// The check: the config rewritten as Strata's setup rewrites it
// (the relay replaced by engine/strata-vision, host and api_key dropped,
// port back to 8080): status says so, and `vision repair` puts the
// companion's placement back through the service, with the diff.
func TestRewrittenConfigIsNoticedAndRepaired(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := visionRoot(t)
	raw, _ := os.ReadFile(r.Config)
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["api_key"], m["host"] = "secret-key-1", "localhost"
	raw, _ = json.MarshalIndent(m, "", "  ")
	os.WriteFile(r.Config, raw, 0o644)
	os.WriteFile(r.Dir+"/model.gguf", []byte("GGUF"), 0o644)
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config, "--port", strconv.Itoa(r.Port))
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if code, out := cliRun("vision", "cpu", "--yes"); code != 0 {
		t.Fatalf("vision cpu: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ServerReady)
	if st, _ := c.State(ctx); len(st.Config.Rewritten) != 0 {
		t.Fatalf("a config as the companion left it is said rewritten: %v", st.Config.Rewritten)
	}

	// Strata's setup, run again by hand.
	cmd := exec.Command(r.Python, "setup.py", "--setup", "--yes", "--no-start")
	cmd.Dir = r.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup --setup: %v\n%s", err, out)
	}
	seen := follow(t, c, &since, events.ConfigRewritten)
	msg := seen[len(seen)-1].Message
	st, _ := c.State(ctx)
	all := strings.Join(st.Config.Rewritten, "\n")
	for _, want := range []string{"the relay was replaced by engine/strata-vision", "host went from localhost to 127.0.0.1", "api_key was dropped", "port went from " + strconv.Itoa(r.Port) + " to 8080"} {
		if !strings.Contains(all, want) {
			t.Errorf("the findings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all+msg, "secret-key-1") {
		t.Error("the api_key's value is in the findings")
	}
	code, out := cliRun("status")
	if !strings.Contains(out, "rewritten by someone else") || !strings.Contains(out, "vision repair") {
		t.Errorf("status (%d) does not say the config was rewritten:\n%s", code, out)
	}

	// A dry run says what, in words, and changes nothing; without a
	// terminal and without --yes nothing is done either.
	before, _ := os.ReadFile(r.Config)
	stopProbe := prober(r.Port)
	code, out = cliRun("vision", "repair", "--dry-run")
	for _, want := range []string{"port back to " + strconv.Itoa(r.Port) + " (Strata's setup set 8080)", "host back to localhost", "api_key put back", "pictures back on this PC's CPU", "Dry run: nothing was written"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("vision repair --dry-run (%d) lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "secret-key-1") {
		t.Error("the dry run shows the api_key's value")
	}
	code, out2 := cliRun("vision", "repair")
	if code == 0 || !strings.Contains(out2, "--yes") {
		t.Errorf("vision repair with no terminal and no --yes: %d\n%s", code, out2)
	}
	if now, _ := os.ReadFile(r.Config); string(now) != string(before) {
		t.Fatalf("a dry run or an unconfirmed repair changed the config:\n%s", now)
	}

	t.Logf("text was down for %s during the dry run and the unconfirmed repair (prober, every 0.25 s)", stopProbe())
	stopProbe = prober(r.Port)
	code, out = cliRun("vision", "repair", "--yes")
	if code != 0 || !strings.Contains(out, "strata-vision-relay") || !strings.Contains(out, "Put back") {
		t.Fatalf("vision repair: %d\n%s", code, out)
	}
	cc, _ := strataconfig.Read(r.Config)
	if !cc.NamesRelay() {
		t.Fatal("the relay is not back in the config")
	}
	if cc.Port() != r.Port || cc.Host() != "localhost" || cc.APIKey() != "secret-key-1" {
		t.Errorf("the repair did not put back port, host and api_key: %d %s key set %v", cc.Port(), cc.Host(), cc.APIKey() != "")
	}
	follow(t, c, &since, events.ServerReady)
	t.Logf("text was down for %s during the repair's restart (prober, every 0.25 s)", stopProbe())
	st, _ = c.State(ctx)
	if len(st.Config.Rewritten) != 0 || st.Vision.Placement != "cpu" {
		t.Errorf("after the repair: %v %+v", st.Config.Rewritten, st.Vision)
	}
	// A second repair has nothing left to do.
	if code, out = cliRun("vision", "repair", "--yes"); code != 0 || !strings.Contains(out, "Nothing to repair") {
		t.Errorf("a second repair: %d\n%s", code, out)
	}
	// The companion's own move (off the relay: its env entry goes) is no
	// loss to report or to repair.
	if code, out = cliRun("vision", "gpu", "--yes"); code != 0 {
		t.Fatalf("vision gpu: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ServerReady)
	if code, out = cliRun("vision", "repair", "--dry-run"); !strings.Contains(out, "Nothing to repair") {
		t.Errorf("a repair after the companion's own move: %d\n%s", code, out)
	}
}

// The check: another Strata answering on the port (Strata's own
// window): the service names it (pid, command line) instead of a crash
// loop, and starts its own once the port is free.
func TestForeignStrataOnThePortIsNamed(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	os.WriteFile(r.Dir+"/model-test.gguf", []byte("GGUF"), 0o644)
	// Strata started by hand, as run-test.bat / START-HERE would.
	foreign := exec.Command(r.Python, "serve/server.py", "--engine", "strata", "--config", r.Config, "--port", strconv.Itoa(r.Port))
	foreign.Dir = r.Dir
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { foreign.Process.Kill(); foreign.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(r.Port))
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the foreign Strata did not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	seen := follow(t, c, &since, events.ServerForeign)
	st, _ := c.State(ctx)
	f := st.Server.Foreign
	if f == nil || f.PID != foreign.Process.Pid || !strings.Contains(f.Cmdline, "--config "+r.Config) || !strings.Contains(st.Server.Detail, "Strata server the service did not start") {
		t.Fatalf("the foreign server is not named: %+v %q", f, st.Server.Detail)
	}
	for _, e := range seen {
		if e.Kind == events.ServerStarting || e.Kind == events.ServerRestarting {
			t.Fatalf("the service started into the held port: %+v", e)
		}
	}
	if code, out := cliRun("status"); !strings.Contains(out, "process "+strconv.Itoa(f.PID)) {
		t.Errorf("status (%d) does not name the process:\n%s", code, out)
	}
	// Closed: the service starts its own.
	foreign.Process.Signal(os.Interrupt)
	foreign.Wait()
	follow(t, c, &since, events.ServerStarting, events.ServerReady)
	if st, _ := c.State(ctx); st.Server.Foreign != nil || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the foreign one ended: %+v", st.Server)
	}
}
