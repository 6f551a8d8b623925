package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
)

// wineEnv is a private 64-bit wine prefix (TOOLING.md: a ProcessPrng shim for
// Go programs, a persistent wineserver started first).
type wineEnv struct {
	t      *testing.T
	dir    string
	prefix string
	env    []string
}

func newWine(t *testing.T) *wineEnv {
	t.Helper()
	for _, p := range []string{"wine", "wineserver", "x86_64-w64-mingw32-gcc"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("STRATA_TEST_WINE") == "1" {
				t.Fatalf("STRATA_TEST_WINE=1 but %s is not installed (apt-get install wine wine64 gcc-mingw-w64-x86-64)", p)
			}
			t.Skipf("%s is not installed: the Windows service test runs where wine is (set STRATA_TEST_WINE=1 to require it)", p)
		}
	}
	dir := t.TempDir()
	w := &wineEnv{t: t, dir: dir, prefix: filepath.Join(dir, "prefix")}
	w.env = append(os.Environ(), "WINEPREFIX="+w.prefix, "WINEARCH=win64", "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
	os.MkdirAll(w.prefix, 0o755)
	srv := exec.Command("wineserver", "-p", "900")
	srv.Env = w.env
	if err := srv.Run(); err != nil {
		t.Fatalf("wineserver: %v", err)
	}
	t.Cleanup(func() {
		k := exec.Command("wineserver", "-k")
		k.Env = w.env
		k.Run()
	})
	w.run("cmd", "/c", "exit")
	w.run("winecfg", "-v", "win10")
	shim := filepath.Join(dir, "shim.c")
	os.WriteFile(shim, []byte(`#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) { ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE; data += n; len -= n; }
  return TRUE;
}
`), 0o644)
	def := filepath.Join(dir, "shim.def")
	os.WriteFile(def, []byte("LIBRARY bcryptprimitives\nEXPORTS\n  ProcessPrng\n"), 0o644)
	cc := exec.Command("x86_64-w64-mingw32-gcc", "-O2", "-shared", "-s", "-o",
		filepath.Join(w.prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), shim, def, "-ladvapi32")
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("building the ProcessPrng shim: %v\n%s", err, out)
	}
	return w
}

// run runs a Windows program (stdin from /dev/null, or wine's pipes never
// close) and returns its output and whether it exited 0.
func (w *wineEnv) run(args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wine", args...)
	cmd.Env = w.env
	cmd.Dir = w.dir
	// Output into a file, not a pipe: wine's helper processes (winedevice,
	// services) inherit it and would hold a pipe open for ever.
	f, err := os.CreateTemp(w.dir, "out-*")
	if err != nil {
		w.t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, _ := os.ReadFile(f.Name())
	return string(out), err == nil
}

func (w *wineEnv) drive(p string) string {
	return filepath.Join(append([]string{w.prefix, "drive_c"}, strings.Split(p, `\`)...)...)
}

func buildWindows(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s for Windows: %v\n%s", pkg, err, b)
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
	buildWindows(t, svc, ".")
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
	tok, _ := os.ReadFile(w.drive(`ProgramData\StrataCompanion\state\control-token`))
	c := &controlapi.Client{BaseURL: "http://" + strings.TrimSpace(string(addr)), Token: strings.TrimSpace(string(tok))}
	ctx := context.Background()
	s0, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
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
