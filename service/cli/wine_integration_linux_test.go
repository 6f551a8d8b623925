package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/testenv"
)

// wineEnv is a private 64-bit wine prefix (testenv.Wine: the ProcessPrng
// shim for Go programs, a persistent wineserver, a private HOME).
type wineEnv struct {
	*testenv.Wine
	dir string
}

func newWine(t *testing.T) *wineEnv {
	t.Helper()
	w := testenv.WineFor(t, nil) // Windows 10, as the service requires
	return &wineEnv{Wine: w, dir: w.Dir}
}

func (w *wineEnv) run(args ...string) (string, bool) { return w.Run(args...) }

func (w *wineEnv) drive(p string) string { return w.Drive(p) }

func buildWindows(t *testing.T, out, pkg string) {
	t.Helper()
	if err := testenv.BuildGo(out, pkg, "windows", "amd64"); err != nil {
		t.Fatal(err)
	}
}

// The Windows service under wine: install, start (services.exe starts us in
// session 1: the dispatcher must still run), the supervisor's Windows side
// (job object, normal priority) running a Windows stand-in Strata to ready,
// a restart through the control API, stop, uninstall.
func TestWindowsServiceUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up a wine prefix (about a minute)")
	}
	w := newWine(t)
	svc := filepath.Join(w.dir, "strata-service.exe")
	buildWindows(t, svc, "..")
	// A Windows Strata install whose venv python is the stand-in (it skips
	// the serve/server.py argument).
	root := w.drive(`Strata`)
	for _, d := range []string{"serve", "engine", `.venv\Scripts`} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	buildWindows(t, filepath.Join(root, ".venv", "Scripts", "python.exe"), "github.com/strata-companion/companion/internal/fakestrata/cmd/strata-standin")
	os.WriteFile(filepath.Join(root, "serve", "server.py"), []byte("# stand-in\n"), 0o644)
	os.WriteFile(filepath.Join(root, "engine", "strata.exe"), []byte("MZ"), 0o755)
	port, _ := fakestrata.FreePort()
	os.WriteFile(filepath.Join(root, "strata-test.json"), []byte(fmt.Sprintf(`{"exe": "engine\\strata.exe", "args": [], "log": "strata-test.log", "port": %d}`, port)), 0o644)
	where := []string{"--strata-root", `C:\Strata`, "--config", `C:\Strata\strata-test.json`}

	out, ok := w.run(append([]string{svc, "install"}, where...)...)
	if !ok || !strings.Contains(out, "Installed the strata-companion service (windows-service)") {
		t.Fatalf("install: %s", out)
	}
	// The ladder itself (SetRecoveryActions) must be accepted. wine 8 does
	// not know SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, so the one warning
	// allowed is about that second call (restart after an error exit too);
	// any other warning is a failure. (wine keeps no failure actions, so
	// they cannot be read back here.)
	if strings.Contains(out, "restart-on-failure ladder") {
		if strings.Contains(out, "setting the restart ladder") || !strings.Contains(out, "restarting also after an exit with an error code") {
			t.Errorf("install could not set the restart ladder: %s", out)
		} else {
			t.Logf("install warned about the non-crash flag only (a known wine 8 gap): %s", out)
		}
	}
	if out, ok := w.run(svc, "install"); ok || !strings.Contains(out, "already installed") {
		t.Errorf("a second install: %s", out)
	}
	if out, ok := w.run(svc, "start"); !ok || !strings.Contains(out, "Started") {
		t.Fatalf("start: %s", out)
	}
	var st struct {
		Service *serviceStatus `json:"service"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := w.run(append([]string{svc, "status", "--json"}, where...)...)
		st.Service = nil
		if i := strings.Index(out, "{"); i >= 0 { // wine may print its own lines first
			json.Unmarshal([]byte(out[i:]), &st)
		}
		if st.Service != nil && st.Service.State != nil && st.Service.State.Server.Phase == "ready" {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(w.drive(`ProgramData\StrataCompanion\logs\strata-service.log`))
			t.Fatalf("no ready server under the Windows service:\n%s\n%s", out, log)
		}
		time.Sleep(time.Second)
	}
	if !st.Service.Installed || !st.Service.Running || st.Service.State.Server.Experts != 3112 {
		t.Errorf("status %+v %+v", st.Service, st.Service.State.Server)
	}

	// The control API from this side of wine: the same files, the same loopback.
	addr, _ := os.ReadFile(w.drive(`ProgramData\StrataCompanion\state\control-addr`))
	// The read token reads and changes nothing; the operator's restarts.
	readTok, _ := os.ReadFile(w.drive(`ProgramData\StrataCompanion\state\control-token`))
	tok, _ := os.ReadFile(w.drive(`ProgramData\StrataCompanion\state\control-operator-token`))
	reader := &controlapi.Client{BaseURL: "http://" + strings.TrimSpace(string(addr)), Token: strings.TrimSpace(string(readTok))}
	c := &controlapi.Client{BaseURL: "http://" + strings.TrimSpace(string(addr)), Token: strings.TrimSpace(string(tok))}
	ctx := context.Background()
	s0, err := reader.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var se *controlapi.StatusError
	if err := reader.Server(ctx, "restart"); !errors.As(err, &se) || se.Code != 403 {
		t.Fatalf("a restart with the read token: %v", err)
	}
	since := s0.Seq
	if err := c.Server(ctx, "restart"); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerExited, events.ServerStarting, events.ServerReady)

	if out, ok := w.run(svc, "stop"); !ok || !strings.Contains(out, "Stopped") {
		t.Fatalf("stop: %s", out)
	}
	if _, err := os.Stat(w.drive(`ProgramData\StrataCompanion\state\control-addr`)); err == nil {
		t.Error("the control address file outlived the service")
	}
	if out, ok := w.run(svc, "uninstall"); !ok || !strings.Contains(out, "Removed") {
		t.Fatalf("uninstall: %s", out)
	}
	if out, ok := w.run(svc, "uninstall"); ok || !strings.Contains(out, "not installed") {
		t.Errorf("a second uninstall: %s", out)
	}
}
