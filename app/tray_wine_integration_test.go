//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/service/controltest"
)

// The Windows tray (strata-tray.exe, cross-built) under wine, in an Xvfb
// display with trayer: wine docks Windows tray icons into an X tray. It
// follows the stand-in API given as a Windows path, a second start finds the
// session mutex and exits, and a notice becomes a balloon from the tray's own
// icon (Shell_NotifyIconW with NIF_INFO on systray's window). wine is not in
// scripts/install-deps.sh: the test skips without it unless STRATA_TEST_WINE=1.
func TestWindowsTrayUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up a wine prefix")
	}
	bins := testenv.LookPath(t, "trayer", "xdotool")
	disp := testenv.StartDisplay(t, 1024, 600)
	// The consolidated wine (testenv.Wine: ProcessPrng shim, persistent
	// wineserver, private HOME), started with the display's environment.
	w := testenv.WineFor(t, disp.Env)
	dir := t.TempDir()
	env := w.Env

	// Output goes to files, not pipes: wine's helper processes (explorer.exe
	// for the display and its tray) inherit them and outlive the command,
	// so a pipe would never reach EOF. stdin stays /dev/null for the same
	// reason.
	outN := 0
	wine := func(ctx context.Context, args ...string) (*exec.Cmd, string) {
		outN++
		out := filepath.Join(dir, "wine-"+strconv.Itoa(outN)+".log")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd := exec.CommandContext(ctx, "wine", args...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, f, f
		return cmd, out
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	exe := testenv.Program(t, ".", testenv.BuildOptions{GOOS: "windows", GOARCH: "amd64", Name: "strata-tray.exe",
		Flags: []string{"-trimpath", "-ldflags=-H=windowsgui"}})

	api := controltest.NewService(t, realistic(time.Now()))
	home := filepath.Join(dir, "home")
	api.WriteHome(t, home)
	env = append(env, "STRATA_COMPANION_HOME=Z:"+strings.ReplaceAll(home, "/", `\`))

	tr := exec.Command(bins[0], "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32", "--transparent", "false")
	tr.Env = env
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Process.Kill(); tr.Wait() })

	tray, trayOut := wine(ctx, exe)
	if err := tray.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		tray.Process.Kill()
		tray.Wait()
		if t.Failed() {
			t.Logf("strata-tray.exe's output:\n%s", read(trayOut))
		}
	}()

	// explorer.exe windows of at least w x h pixels, visible: the docked
	// icon (about 20x30) and a balloon (about 270x70).
	windows := func(w, h int) int {
		cmd := exec.Command(bins[1], "search", "--onlyvisible", "--classname", "explorer.exe")
		cmd.Env = env
		out, _ := cmd.Output()
		n := 0
		for _, id := range strings.Fields(string(out)) {
			g := exec.Command(bins[1], "getwindowgeometry", "--shell", id)
			g.Env = env
			b, _ := g.Output()
			var gw, gh int
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "WIDTH="); ok {
					gw, _ = strconv.Atoi(v)
				}
				if v, ok := strings.CutPrefix(line, "HEIGHT="); ok {
					gh, _ = strconv.Atoi(v)
				}
			}
			if gw >= w && gh >= h {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never saw %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor("the tray following the control API", func() bool { return api.Polls() > 0 })
	waitFor("the tray icon docked in trayer", func() bool { return windows(16, 16) > 0 })
	before := windows(150, 40)

	second, secondOut := wine(ctx, exe)
	if err := second.Run(); err != nil || !strings.Contains(read(secondOut), "already running") {
		t.Errorf("a second tray under wine: %v %q", err, read(secondOut))
	}

	api.Change(func(s *controlapi.State) {
		s.Remote.Reachable, s.Remote.Reason = false, "connection timed out"
	}, events.Event{Kind: events.RemoteUnreachable})
	waitFor("the notice logged", func() bool {
		return strings.Contains(read(trayOut), "notice: Pictures unavailable: second PC not reachable")
	})
	waitFor("a balloon from the tray icon", func() bool { return windows(150, 40) > before })
	if strings.Contains(read(trayOut), "not shown") {
		t.Errorf("a notification failed:\n%s", read(trayOut))
	}
}
