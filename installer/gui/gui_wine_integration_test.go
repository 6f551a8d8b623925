//go:build linux

// Package gui is the Windows first-hour test under wine: the installer,
// the setup, the tray and the uninstaller clicked through (a test binary of
// its own, so its minutes have their own timeout next to the installer's).
package gui

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/wizard/pages"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// gui drives Windows programs under wine on a private X display, the way a
// user would: through wine's own virtual desktop (a taskbar and a tray, no X
// window manager), with the keyboard where the program has a key for the
// step and a click where only a click will do. Everything it waits for has
// a deadline (step); what it asserts is in the registry, the files and the
// service's state, and the screenshots are kept.
type gui struct {
	t    *testing.T
	disp *testenv.Display
	w    *testenv.Wine
	dir  string // screenshots and logs of this run
	keep string // where the named screenshots go as windows-NAME.png ("" = not kept)
	// step is the deadline of one step. Under a whole make test on 2 cores
	// wine once took 19 s to turn an installer page: a deadline, not a wait.
	step  time.Duration
	shotN int
	logs  []*os.File
	// activeTitle is wine's colour of an active window's caption (read once).
	activeTitle *[3]uint8
}

// screen is the size of wine's virtual desktop (all of the X display).
const screenW, screenH = 1280, 800

func newGUI(t *testing.T) *gui {
	testenv.LookPath(t, "xdotool", "xwininfo", "import")
	disp := testenv.StartDisplay(t, screenW, screenH)
	w := testenv.WineFor(t, disp.Env)
	g := &gui{t: t, disp: disp, w: w, dir: t.TempDir(), keep: os.Getenv("STRATA_WINDOWS_SHOTS"), step: 90 * time.Second}
	if d := os.Getenv("STRATA_WINDOWS_RUN_DIR"); d != "" {
		g.dir = d // every screenshot and log of the run kept there (debugging)
	}
	// wine's own desktop: every window inside one 1280x800 X window, with
	// a taskbar and a notification area, as on Windows.
	g.reg("add", `HKCU\Software\Wine\Explorer`, "/v", "Desktop", "/d", "shell", "/f")
	g.reg("add", `HKCU\Software\Wine\Explorer\Desktops`, "/v", "shell", "/d", fmt.Sprintf("%dx%d", screenW, screenH), "/f")
	t.Cleanup(func() {
		for _, f := range g.logs {
			f.Close()
		}
	})
	return g
}

func (g *gui) reg(args ...string) string {
	g.t.Helper()
	out, ok := g.w.Run(append([]string{"reg"}, args...)...)
	if !ok {
		g.t.Fatalf("reg %s: %s", strings.Join(args, " "), out)
	}
	return out
}

// regValue is a registry value's data, "" when it is not there.
func (g *gui) regValue(key, name string) string {
	out, ok := g.w.Run("reg", "query", key, "/v", name)
	if !ok {
		return ""
	}
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.EqualFold(f[0], name) && strings.HasPrefix(f[1], "REG_") {
			_, rest, _ := strings.Cut(l, f[1])
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// started is a program start runs: stop ends it and waits for it (the one
// Wait is start's own goroutine: a second one races it).
type started struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *started) stop() {
	p.cmd.Process.Kill()
	<-p.done
}

// start runs a Windows program in the background, its output in a log of
// this run (files, never pipes: wine's helpers inherit them).
func (g *gui) start(name string, env []string, args ...string) (*started, string) {
	g.t.Helper()
	logPath := filepath.Join(g.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		g.t.Fatal(err)
	}
	g.logs = append(g.logs, f)
	cmd := g.w.Command(context.Background(), args...)
	cmd.Env = append(append([]string{}, g.w.Env...), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p := &started{cmd: cmd, done: done}
	g.t.Cleanup(func() {
		select {
		case <-done:
		default:
			p.stop()
		}
	})
	return p, logPath
}

func (g *gui) x(args ...string) string {
	cmd := exec.Command("xdotool", args...)
	cmd.Env = g.disp.Env
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// focus gives r the keyboard: a click on its title bar (xdotool's
// windowactivate does not reach windows inside wine's desktop).
func (g *gui) focus(r win) { g.click(r.x+r.w/2, r.y+10, "1") }

// activate clicks r's title bar until wine draws it as the active window
// (its caption in wine's ActiveTitle colour), so the next key reaches r. A
// window as it appears is the taskbar's but drawn inactive, and a Return
// then is sometimes lost (a page that never moved on).
func (g *gui) activate(what string, r win) {
	g.t.Helper()
	if g.activeTitle == nil {
		v := g.regValue(`HKCU\Control Panel\Colors`, "ActiveTitle")
		var c [3]uint8
		if n, err := fmt.Sscanf(v, "%d %d %d", &c[0], &c[1], &c[2]); n != 3 || err != nil {
			g.t.Fatalf("wine's ActiveTitle colour (HKCU\\Control Panel\\Colors) is %q: %v", v, err)
		}
		g.activeTitle = &c
	}
	caption := image.Rect(r.x+r.w/2, r.y+6, r.x+r.w*3/4, r.y+14)
	g.until(what+": the window active", func() bool {
		img, _ := g.screenshot()
		if near(img, caption, *g.activeTitle, 8) > caption.Dx()*caption.Dy()/2 {
			return true
		}
		// A click on the title bar of a window wine shows as the taskbar's
		// but draws inactive does not activate it; one on the empty
		// desktop first, then on the title bar, does.
		g.click(40, 40, "1")
		g.focus(r)
		return false
	})
}

// key presses keys in the active window.
func (g *gui) key(keys ...string) { g.x(append([]string{"key", "--delay", "120"}, keys...)...) }

// click clicks at a point of the screen (points come from screenshots:
// xdotool's own positions are doubled inside wine's desktop).
func (g *gui) click(x, y int, button string) {
	g.x("mousemove", strconv.Itoa(x), strconv.Itoa(y))
	g.x("click", button)
}

type win struct {
	id         string
	x, y, w, h int
}

func (r win) String() string { return fmt.Sprintf("%dx%d at %d,%d", r.w, r.h, r.x, r.y) }

// windows lists the visible windows whose title is name (wine's desktop
// shows every Windows window as an X window of its own), with the position
// xwininfo reports (xdotool's is doubled here).
func (g *gui) windows(name string) []win {
	var out []win
	for _, r := range g.search("--name", name) {
		if strings.TrimSpace(g.x("getwindowname", r.id)) == name { // NSIS may add a space
			out = append(out, r)
		}
	}
	return out
}

// tree is every window on the screen, for failure messages.
func (g *gui) tree() string {
	cmd := exec.Command("xwininfo", "-root", "-tree")
	cmd.Env = g.disp.Env
	b, _ := cmd.Output()
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "x") && !strings.Contains(l, " 1x1+") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// search is xdotool search --onlyvisible with args, as windows.
func (g *gui) search(args ...string) []win {
	var out []win
	for _, id := range strings.Fields(g.x(append([]string{"search", "--onlyvisible"}, args...)...)) {
		cmd := exec.Command("xwininfo", "-id", id)
		cmd.Env = g.disp.Env
		b, err := cmd.Output()
		if err != nil {
			continue
		}
		r := win{id: id}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			switch k {
			case "Absolute upper-left X":
				r.x = n
			case "Absolute upper-left Y":
				r.y = n
			case "Width":
				r.w = n
			case "Height":
				r.h = n
			}
		}
		if r.w > 1 && r.h > 1 {
			out = append(out, r)
		}
	}
	return out
}

// screenshot saves the whole screen and returns it.
func (g *gui) screenshot() (image.Image, string) {
	g.t.Helper()
	g.shotN++
	p := filepath.Join(g.dir, fmt.Sprintf("shot-%03d.png", g.shotN))
	cmd := exec.Command("import", "-window", "root", p)
	cmd.Env = g.disp.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		g.t.Fatalf("import: %v %s", err, out)
	}
	f, err := os.Open(p)
	if err != nil {
		g.t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		g.t.Fatal(err)
	}
	return img, p
}

// keepShot saves the screen as docs' windows-NAME.png (when kept) and in
// this run's folder, and returns it.
func (g *gui) keepShot(name string) image.Image {
	g.t.Helper()
	img, p := g.screenshot()
	if g.keep != "" {
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(filepath.Join(g.keep, "windows-"+name+".png"), b, 0o644); err != nil {
			g.t.Fatal(err)
		}
	}
	g.t.Logf("screenshot %s: %s", name, p)
	return img
}

// colours counts the distinct colours in r of img.
func colours(img image.Image, r image.Rectangle) int {
	seen := map[uint32]bool{}
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, cg, cb, _ := img.At(x, y).RGBA()
			seen[c>>8<<16|cg>>8<<8|cb>>8] = true
		}
	}
	return len(seen)
}

// near counts the pixels in r within d (per channel) of the colour rgb.
func near(img image.Image, r image.Rectangle, rgb [3]uint8, d int) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, cg, cb, _ := img.At(x, y).RGBA()
			if abs(int(c>>8)-int(rgb[0])) <= d && abs(int(cg>>8)-int(rgb[1])) <= d && abs(int(cb>>8)-int(rgb[2])) <= d {
				n++
			}
		}
	}
	return n
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func (r win) rect() image.Rectangle { return image.Rect(r.x, r.y, r.x+r.w, r.y+r.h) }

// until polls ok (a few times a second) for at most the step's deadline.
func (g *gui) until(what string, ok func() bool) {
	g.t.Helper()
	g.untilFor(g.step, what, ok)
}

func (g *gui) untilFor(d time.Duration, what string, ok func() bool) {
	g.t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > d {
			_, p := g.screenshot()
			g.t.Fatalf("%s: not within %v (the screen then: %s; its windows:\n%s)", what, d, p, g.tree())
		}
		time.Sleep(250 * time.Millisecond)
	}
	g.t.Logf("%s: %.1f s", what, time.Since(start).Seconds())
}

// waitWindow waits for a window named name whose size passes fit and whose
// area is drawn (more than 50 colours: not a blank frame), and returns it.
func (g *gui) waitWindow(name string, fit func(win) bool) win {
	g.t.Helper()
	var got win
	g.until("the window "+name, func() bool {
		for _, r := range g.windows(name) {
			if fit != nil && !fit(r) {
				continue
			}
			img, _ := g.screenshot()
			if colours(img, r.rect()) > 50 {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// settled waits until the area r shows something other than before and
// then stays the same over two looks half a second apart (a page drawn,
// its automatic step done), and returns the picture.
func (g *gui) settled(what string, r image.Rectangle, before image.Image) image.Image {
	g.t.Helper()
	var last image.Image
	g.until(what, func() bool {
		img, _ := g.screenshot()
		if before != nil && same(img, before, r) {
			return false
		}
		if last != nil && same(img, last, r) {
			return true
		}
		last = img
		return false
	})
	return last
}

func same(a, b image.Image, r image.Rectangle) bool {
	r = r.Intersect(a.Bounds()).Intersect(b.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// fits reports a window wholly on the screen, above the taskbar.
func fits(r win) bool {
	return r.x >= 0 && r.y >= 0 && r.x+r.w <= screenW && r.y+r.h <= screenH-20
}

// The app icon's dark blue (assets/app.png): the wizard's title bar shows
// it, wine's generic window icon has none of it.
var iconBlue = [3]uint8{0x1f, 0x2b, 0x66}

// hasAppIcon reports the app icon in the title bar of r (its left corner).
func hasAppIcon(img image.Image, r win) bool {
	return near(img, image.Rect(r.x+2, r.y+2, r.x+24, r.y+22), iconBlue, 24) >= 12
}

// guiInstaller is the installer the GUI test clicks through, and the folder
// of the Windows programs in it: $STRATA_TEST_INSTALLER when set (a build of
// this checkout, e.g. from make installer), else one made now by build.sh,
// reusing make build-windows' programs when they are of this source (as CI
// does), packed fast (zlib).
func guiInstaller(t *testing.T) (setup, bindir string) {
	t.Helper()
	if p := os.Getenv("STRATA_TEST_INSTALLER"); p != "" {
		p, _ = filepath.Abs(p)
		return p, filepath.Join(filepath.Dir(p), "windows-amd64")
	}
	testenv.LookPath(t, "bash", "go", "makensis", "x86_64-w64-mingw32-gcc")
	dist := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "build.sh"))
	cmd.Env = append(os.Environ(), "DIST="+dist, "STRATA_NSIS_FAST=1")
	if prebuilt, err := filepath.Abs(filepath.Join("..", "..", "bin", "windows-amd64")); err == nil {
		cmd.Env = append(cmd.Env, "STRATA_WINDOWS_PREBUILT="+prebuilt)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	return filepath.Join(dist, "StrataCompanionSetup-"+testenv.AppVersion(t)+".exe"), filepath.Join(dist, "windows-amd64")
}

// strataRoot lays out a stand-in Strata install at C:\Strata: the venv's
// python is the stand-in server (it skips serve\server.py), the engine
// folder holds the stand-in encoder, the model files are small GGUFs with
// the real headers, and the config is shaped like Strata's own (long args,
// a vision block, a key the companion does not know).
func strataRoot(t *testing.T, g *gui) (cfg string, original []byte) {
	t.Helper()
	root := g.w.Drive(`Strata`)
	for _, d := range []string{"serve", "engine", `.venv\Scripts`, "models"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(d, `\`, "/"))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := func(out, pkg string) {
		if err := testenv.BuildGo(out, pkg, "windows", "amd64"); err != nil {
			t.Fatal(err)
		}
	}
	build(filepath.Join(root, ".venv", "Scripts", "python.exe"), "github.com/strata-companion/companion/internal/fakestrata/cmd/strata-standin")
	build(filepath.Join(root, "engine", "strata-vision.exe"), "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	os.WriteFile(filepath.Join(root, "serve", "server.py"), []byte("# stand-in\n"), 0o644)
	os.WriteFile(filepath.Join(root, "engine", "strata.exe"), []byte("MZ"), 0o755)
	if err := fakeencoder.WriteMmproj(filepath.Join(root, "models", "mmproj-Qwen3.6-35B-A3B-F16.gguf"), 2048); err != nil {
		t.Fatal(err)
	}
	if err := fakeencoder.WriteModel(filepath.Join(root, "models", "Qwen3.6-35B-A3B-IQ2_XS.gguf"), 40); err != nil {
		t.Fatal(err)
	}
	port, err := fakestrata.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	original = []byte(fmt.Sprintf(`{
  "exe": "engine\\strata.exe",
  "args": ["-m", "models\\Qwen3.6-35B-A3B-IQ2_XS.gguf", "--ctx-size", "32768", "--threads", "8", "--cache-type-k", "q8_0", "--flash-attn", "--expert-cache-gib", "6"],
  "log": "strata-iq2_xs.log",
  "port": %d,
  "vision": {
    "exe": "engine\\strata-vision.exe",
    "mmproj": "models\\mmproj-Qwen3.6-35B-A3B-F16.gguf",
    "model": "models\\Qwen3.6-35B-A3B-IQ2_XS.gguf"
  },
  "ui": {"theme": "dark", "future_key": [1, 2, 3]}
}
`, port))
	cfg = filepath.Join(root, "strata-iq2_xs.json")
	if err := os.WriteFile(cfg, original, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, original
}

// client is the service's control API, from its address and token files
// on the Windows side (the same loopback).
func (g *gui) client() (*controlapi.Client, error) {
	return controlapi.NewClientFrom(g.w.Drive(`ProgramData\StrataCompanion\state`))
}

// state is the service's state, nil while it does not answer.
func (g *gui) state() *controlapi.State {
	c, err := g.client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.State(ctx)
	if err != nil {
		return nil
	}
	return st
}

// serviceLog is the service's log (for failure messages).
func (g *gui) serviceLog() string {
	b, _ := os.ReadFile(g.w.Drive(`ProgramData\StrataCompanion\logs\strata-service.log`))
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// Where the installer puts things, and its registry entries.
const (
	instDir    = `Program Files\Strata Companion`
	regKey     = `HKLM\Software\StrataCompanion`
	uninstKey  = `HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\StrataCompanion`
	runKeyHKLM = `HKLM\Software\Microsoft\Windows\CurrentVersion\Run`
	runKeyHKCU = `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`
	setupTitle = "Strata Companion Setup"
	wizTitle   = "Strata Companion setup"
)

// installerPage waits for the installer's window (its pages are 400 or
// more wide; its message boxes share the title and are smaller) to show
// something new and settle, and fails on a message box.
func (g *gui) installerPage(what string, before image.Image) (win, image.Image) {
	g.t.Helper()
	w := g.waitWindow(setupTitle, func(r win) bool { return r.w >= 400 })
	// The keys go to the installer: under wine a console window the
	// service gives itself (Strata's Ctrl-Break needs one; on Windows it
	// lives in the service's own session, never on the desktop) takes the
	// keyboard focus when it appears.
	g.activate(what, w)
	img := g.settled(what, w.rect(), before)
	for _, r := range g.windows(setupTitle) {
		if r.w < 400 {
			_, p := g.screenshot()
			g.t.Fatalf("%s: the installer showed a message box (%s): %s", what, r, p)
		}
	}
	return w, img
}

// trayMenu right-clicks the tray icon (the rightmost in wine's taskbar:
// it has no window of its own), waits for its menu (a window of
// strata-tray.exe), keeps a screenshot, closes the menu by clicking on the
// empty desktop, and returns the menu's window.
func (g *gui) trayMenu(name string) (win, image.Image) {
	g.t.Helper()
	g.click(screenW-10, screenH-10, "3")
	var menu win
	g.until("the tray menu ("+name+")", func() bool {
		for _, r := range g.search("--classname", "strata-tray.exe") {
			if r.w >= 100 && r.h >= 100 {
				img, _ := g.screenshot()
				if colours(img, r.rect()) > 4 {
					menu = r
					return true
				}
			}
		}
		return false
	})
	g.settled("the tray menu drawn", menu.rect(), nil)
	img := g.keepShot(name)
	g.click(40, 40, "1")
	g.until("the tray menu closed", func() bool {
		for _, r := range g.search("--classname", "strata-tray.exe") {
			if r.w >= 100 && r.h >= 100 {
				return false
			}
		}
		return true
	})
	return menu, img
}

// trayIcon waits for an icon in the tray's place and returns the screen
// with nothing open over it.
func (g *gui) trayIcon(what string) image.Image {
	g.t.Helper()
	var img image.Image
	g.until(what, func() bool {
		img, _ = g.screenshot()
		return colours(img, image.Rect(screenW-20, screenH-20, screenW, screenH)) > 6
	})
	return img
}

// The Windows user's first hour, under wine, unattended: the tray with no
// service; the installer clicked through with the Strata folder left empty
// (the service is registered with no install); the tray then; Strata put
// at C:\Strata afterwards and the setup walked from Welcome to Done
// (Second PC page included, and a trial picture on the CPU from the
// Pictures page's Measure here: its measured line shown, its figures kept
// in the settings at Apply) against the stand-in Strata, its Apply asserted
// through the service (it runs C:\Strata's config), the config's diff and
// the login entry; the tray ready; the uninstaller clicked through (it puts
// the config back byte for byte); the installer again with the folder
// found; the setup at 150 % on the same screen. Each window must fit the
// 1280x800 screen and the setup's must carry the app's icon. With
// STRATA_WINDOWS_SHOTS=DIR the screenshots are kept as DIR/windows-*.png
// (make screenshots-windows: docs/).
func TestWindowsGUIUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("installs, sets up and uninstalls under wine (minutes)")
	}
	testenv.NeedWine(t)
	began := time.Now()
	setup, bindir := guiInstaller(t)
	g := newGUI(t)
	t.Logf("wine ready after %.0f s", time.Since(began).Seconds())
	defer func() {
		t.Logf("the whole walk took %.0f s", time.Since(began).Seconds())
		if t.Failed() {
			t.Logf("the service's log:\n%s", g.serviceLog())
		}
	}()
	// A GPU for the probe: the NVIDIA driver's nvidia-smi in System32.
	if err := testenv.BuildGo(filepath.Join(g.w.System32(), "nvidia-smi.exe"), "github.com/strata-companion/companion/internal/testenv/cmd/nvidia-smi-standin", "windows", "amd64"); err != nil {
		t.Fatal(err)
	}

	// 1. The tray before anything is installed: the service is not there.
	if err := testenv.CopyFile(filepath.Join(bindir, "strata-tray.exe"), g.w.Drive(`t\strata-tray.exe`), 0o755); err != nil {
		t.Fatal(err)
	}
	tray, _ := g.start("tray-1", nil, `C:\t\strata-tray.exe`)
	g.trayIcon("the tray icon (no service)")
	if m, _ := g.trayMenu("tray-no-service"); m.w > 640 || !fits(m) {
		t.Errorf("the tray menu with no service is %s: wider than 640 px or off the screen", m)
	}
	tray.stop()

	// 2. The installer, the Strata folder left empty ("choose it later in
	// the setup"), the tray at sign-in ticked.
	setupWin := g.w.Drive(`t\StrataCompanionSetup.exe`)
	if err := testenv.CopyFile(setup, setupWin, 0o755); err != nil {
		t.Fatal(err)
	}
	g.start("installer-1", nil, `C:\t\StrataCompanionSetup.exe`)
	w, img := g.installerPage("the installer's Welcome page", nil)
	if !fits(w) {
		t.Errorf("the installer's window is %s: off the screen", w)
	}
	g.keepShot("installer-welcome")
	g.key("Return") // Next
	_, img = g.installerPage("the licence page", img)
	g.key("Return") // I Agree
	_, img = g.installerPage("the role page", img)
	g.keepShot("installer-role")
	g.key("Return") // Next: Run Strata on this PC (the default)
	_, img = g.installerPage("the install folder page", img)
	g.key("Return") // Next
	_, img = g.installerPage("the Strata folder page", img)
	g.key("alt+s") // Start the tray icon when anyone signs in
	_, img = g.installerPage("the sign-in box ticked", img)
	g.keepShot("installer-strata-empty")
	g.key("Return") // Install
	g.until("the service registered and running", func() bool { return g.state() != nil })
	g.installerPage("the Finish page", img)
	g.keepShot("installer-finish")
	if v := g.regValue(regKey, "StrataRoot"); v != "" {
		t.Errorf("the installer remembered a Strata folder (%q) though none was chosen", v)
	}
	if v := g.regValue(regKey, "Role"); v != "strata" {
		t.Errorf("the installer remembered the role %q, want strata (Run Strata on this PC)", v)
	}
	if v := g.regValue(runKeyHKLM, "StrataCompanionTray"); !strings.Contains(v, "strata-tray.exe") {
		t.Errorf("the installer's sign-in entry for the tray: %q", v)
	}
	if st := g.state(); st == nil || st.Config.StrataRoot != "" {
		t.Fatalf("the service with no Strata folder chosen: %+v", st)
	}

	// 3. Finish opens the setup (as the signed-in user, through explorer).
	// Strata is put at C:\Strata now, after the service was registered.
	cfg, original := strataRoot(t, g)
	g.key("Return") // Finish, "Open Strata Companion setup now" ticked
	wz := g.waitWindow(wizTitle, nil)
	img = g.settled("the setup's Welcome page", wz.rect(), nil)
	g.keepShot("wizard-welcome")
	if !fits(wz) {
		t.Errorf("the setup's window at 100 %% is %s: off the 1280x800 screen", wz)
	}
	if !hasAppIcon(img, wz) {
		t.Errorf("the setup's window has no app icon in its title bar")
	}

	// The tray now: a service with no install.
	g.start("tray-2", nil, `C:\`+instDir+`\strata-tray.exe`)
	g.trayIcon("the tray icon (no install)")
	if m, _ := g.trayMenu("tray-no-install"); m.w > 640 || !fits(m) {
		t.Errorf("the tray menu with no install is %s: wider than 640 px or off the screen (a whole error on one line?)", m)
	}

	// 4. The setup, Welcome to Done. Enter is Next on every page.
	page := func(name string) image.Image {
		t.Helper()
		g.focus(wz)
		before, _ := g.screenshot()
		g.key("Return")
		img = g.settled("the setup's "+name+" page", wz.rect(), before)
		g.keepShot("wizard-" + name)
		return img
	}
	page("strata")
	page("this-pc")
	page("placement")
	// The Second PC page: Tab to the "a second PC" choice, Space, Next;
	// then Back, and the recommended choice again; a trial picture on the
	// CPU (Measure here), its figures on the page; Next.
	g.secondPCDetour(wz, &img)
	g.measureCPU(wz, &img)
	g.click(wz.x+wz.w-50, wz.y+wz.h-30, "1") // Next
	img = g.settled("the setup's review page", wz.rect(), img)
	g.keepShot("wizard-review")
	// The mouse wheel over the diff scrolls the page down (a sideways
	// scroller under the pointer took the wheel before): the service's
	// lines and the sign-in box come into view.
	g.x("mousemove", strconv.Itoa(wz.x+wz.w/3), strconv.Itoa(wz.y+wz.h/2))
	for i := 0; i < 20; i++ {
		g.x("click", "5")
	}
	img = g.settled("the Review page scrolled down by the wheel", wz.rect(), img)
	g.keepShot("wizard-review-scrolled")
	if !fits(wz) {
		t.Errorf("the setup's window is %s on the Review page", wz)
	}
	g.focus(wz)
	img, _ = g.screenshot()
	g.key("Return") // Apply
	// Apply must lead the service, registered before Strata's folder was
	// chosen, to run C:\Strata with its config. A page that stops changing
	// while the service runs something else is a failed Apply.
	var st *controlapi.State
	applied := false
	last, lastChange := img, time.Now()
	g.untilFor(3*time.Minute, "the service running C:\\Strata's config after Apply", func() bool {
		st = g.state()
		if st != nil && strings.EqualFold(st.Config.Path, `C:\Strata\strata-iq2_xs.json`) && st.Server.Phase == controlapi.PhaseReady {
			applied = true
			return true
		}
		now, p := g.screenshot()
		if !same(now, last, wz.rect()) {
			last, lastChange = now, time.Now()
			return false
		}
		if time.Since(lastChange) > 15*time.Second {
			// The rest of the walk goes on (its own checks and pictures).
			t.Errorf("the setup's Apply failed for an install chosen after the service was registered: the page stays as in %s, the service runs %+v", p, st)
			return true
		}
		return false
	})
	if applied {
		img = g.settled("the Apply page done", wz.rect(), img)
		g.keepShot("wizard-apply")
		now, err := os.ReadFile(cfg)
		if err != nil || string(now) == string(original) {
			t.Errorf("Apply did not change C:\\Strata\\strata-iq2_xs.json (%v)", err)
		}
		if !strings.Contains(string(now), `"future_key": [1, 2, 3]`) {
			t.Errorf("a key the companion does not know was lost:\n%s", now)
		}
		if backups, _ := filepath.Glob(cfg + ".bak-*"); len(backups) == 0 {
			t.Error("no backup of the config beside it")
		}
		g.measuredKept()
		page("done")
		if v := g.regValue(runKeyHKCU, "StrataCompanionTray"); v != "" {
			t.Errorf("the setup wrote a second sign-in entry for the tray (HKCU): %q", v)
		}
		g.focus(wz)
		g.key("Return") // Finish
	} else {
		g.keepShot("wizard-apply-failed")
		g.w.Run("taskkill", "/IM", "strata-setup.exe")
	}
	g.until("the setup closed", func() bool { return len(g.windows(wizTitle)) == 0 })

	// 5. The tray with Strata ready, pictures on the CPU (the setup's choice).
	if m, _ := g.trayMenu("tray-cpu"); m.w > 640 || !fits(m) {
		t.Errorf("the tray menu, Strata ready with pictures on the CPU, is %s", m)
	}
	if st != nil {
		t.Logf("the service's pictures: %q", st.Vision.Placement)
	}

	// 6. The uninstaller, clicked through: settings kept, Strata's picture
	// settings put back. It starts without the keyboard focus.
	g.start("uninstaller", nil, `C:\`+instDir+`\uninstall.exe`)
	uw := g.waitWindow("Strata Companion Uninstall", func(r win) bool { return r.w >= 450 })
	g.focus(uw)
	img = g.settled("the uninstaller's first page", uw.rect(), nil)
	g.keepShot("uninstaller-confirm")
	g.key("Return") // Next
	img = g.settled("the uninstaller's options", uw.rect(), img)
	g.key("alt+p") // Put back Strata's picture (vision) settings
	img = g.settled("the restore box ticked", uw.rect(), img)
	g.keepShot("uninstaller-options")
	g.key("Return") // Uninstall
	boxed := false
	g.untilFor(2*time.Minute, "the install folder removed", func() bool {
		for _, r := range g.windows("Strata Companion Uninstall") {
			if r.w < 450 && !boxed { // a message box: say so, answer OK, go on
				_, p := g.screenshot()
				t.Errorf("the uninstaller showed a message box (%s): %s", r, p)
				boxed = true
				g.key("Return")
			}
		}
		_, err := os.Stat(g.w.Drive(instDir + `\strata-service.exe`))
		return os.IsNotExist(err)
	})
	img = g.settled("the uninstaller done", uw.rect(), img)
	g.keepShot("uninstaller-done")
	g.key("Return") // Close
	g.until("the uninstaller closed", func() bool { return len(g.windows("Strata Companion Uninstall")) == 0 })
	if b, _ := os.ReadFile(cfg); string(b) != string(original) {
		t.Errorf("the uninstaller did not put the config back byte for byte:\n%s\nwant:\n%s", b, original)
	}
	for _, k := range []string{regKey, uninstKey} {
		if out, ok := g.w.Run("reg", "query", k); ok {
			t.Errorf("%s is still there after the uninstall:\n%s", k, out)
		}
	}
	if v := g.regValue(runKeyHKLM, "StrataCompanionTray"); v != "" {
		t.Errorf("the sign-in entry outlived the uninstall: %q", v)
	}
	if out, ok := g.w.Run("sc", "query", "strata-companion"); ok && strings.Contains(out, "STATE") {
		t.Errorf("the service outlived the uninstall:\n%s", out)
	}

	// 7. The installer again, the Strata folder there: the page finds it,
	// the service runs it from the start.
	g.start("installer-2", nil, `C:\t\StrataCompanionSetup.exe`)
	_, img = g.installerPage("the installer's Welcome page (again)", nil)
	g.key("Return")
	_, img = g.installerPage("the licence page (again)", img)
	g.key("Return")
	_, img = g.installerPage("the role page (again)", img)
	g.key("Return")
	_, img = g.installerPage("the install folder page (again)", img)
	g.key("Return")
	_, img = g.installerPage("the Strata folder page, found", img)
	g.keepShot("installer-strata-found")
	g.key("Return") // Install
	g.untilFor(2*time.Minute, `the service running C:\Strata from the install`, func() bool {
		st := g.state()
		return st != nil && strings.EqualFold(st.Config.StrataRoot, `C:\Strata`) && st.Server.Phase == controlapi.PhaseReady
	})
	_, img = g.installerPage("the Finish page (again)", img)
	if v := g.regValue(regKey, "StrataRoot"); !strings.EqualFold(v, `C:\Strata`) {
		t.Errorf("the installer remembered the Strata folder as %q", v)
	}
	g.key("Return") // Finish: the setup opens
	wz = g.waitWindow(wizTitle, nil)
	g.settled("the setup, opened on an installed PC", wz.rect(), nil)
	g.w.Run("taskkill", "/IM", "strata-setup.exe")
	g.until("the setup closed (again)", func() bool { return len(g.windows(wizTitle)) == 0 })
	// The tray with Strata ready and pictures on this GPU (the config as it
	// was before the companion, put back by the uninstaller).
	g.start("tray-3", nil, `C:\`+instDir+`\strata-tray.exe`)
	g.trayIcon("the tray icon (ready)")
	if m, _ := g.trayMenu("tray-ready"); m.w > 640 || !fits(m) {
		t.Errorf("the tray menu, Strata ready, is %s", m)
	}

	// 8. 150 %: the same 1280x800 screen at 144 dpi. The window fits, its
	// steps, title and buttons on the screen.
	g.reg("add", `HKCU\Control Panel\Desktop`, "/v", "LogPixels", "/t", "REG_DWORD", "/d", "144", "/f")
	g.start("setup-150", nil, `C:\`+instDir+`\strata-setup.exe`)
	wz = g.waitWindow(wizTitle, nil)
	img = g.settled("the setup at 150 %", wz.rect(), nil)
	g.keepShot("wizard-150")
	if !fits(wz) {
		t.Errorf("the setup's window at 150 %% is %s: off the 1280x800 screen", wz)
	}
	if !hasAppIcon(img, wz) {
		t.Errorf("the setup's window at 150 %% has no app icon in its title bar")
	}

}

// secondPCDetour goes from the Pictures page to the Second PC page and
// back, and leaves the CPU chosen: Tab moves the keyboard through the
// choices and their Measure buttons (this GPU, its Measure here, the CPU,
// its Measure here, a second PC, its Measure here, off: each choice its
// own group), Space picks the focused one; Next and Back are clicked (a
// picked choice keeps the focus, and Enter is then its own), at their
// place in the window's bottom right corner. A pick redraws the page, and
// the next Tab starts again from its first choice.
func (g *gui) secondPCDetour(wz win, img *image.Image) {
	g.t.Helper()
	next := func() { g.click(wz.x+wz.w-50, wz.y+wz.h-30, "1") }
	back := func() { g.click(wz.x+wz.w-126, wz.y+wz.h-30, "1") }
	g.focus(wz)
	g.key("Tab", "Tab", "Tab", "Tab", "Tab", "space") // a second PC
	*img = g.settled("a second PC chosen", image.Rect(wz.x, wz.y, wz.x+wz.w, wz.y+wz.h), *img)
	next()
	*img = g.settled("the setup's Second PC page", wz.rect(), *img)
	g.keepShot("wizard-second-pc")
	back()
	*img = g.settled("the Pictures page again", wz.rect(), *img)
	g.focus(wz)
	g.key("Tab", "Tab", "Tab", "space") // the CPU
	*img = g.settled("the CPU chosen", wz.rect(), *img)
	g.keepShot("wizard-placement-cpu")
}

// The colours of the wizard's success and warning words: its own light
// theme's (wizard/pages.Theme), and fyne's dark ones, which that theme
// keeps (fyne's dark theme reads the running app, which this test has
// not). The Pictures page's measured line ("0.62 s per picture, measured
// here · start 1.9 s") is the only success-coloured text on it, a failed
// trial's line ("The trial picture failed: ...") the only warning-coloured
// one.
var (
	successGreen  = [][3]uint8{lightColour(theme.ColorNameSuccess), {0x43, 0xf4, 0x36}}
	warningOrange = [][3]uint8{lightColour(theme.ColorNameWarning), {0xff, 0x98, 0x00}}
)

// wordsNear is how far (per channel) a pixel may be from those colours:
// the light theme's green is 40 from a mid grey (#565656, text edges) in
// each channel, so the bright colours' 40 would count grey text as green.
const wordsNear = 24

func lightColour(n fyne.ThemeColorName) [3]uint8 {
	r, g, b, _ := pages.Theme().Color(n, theme.VariantLight).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// nearAny counts the pixels near any of the colours.
func nearAny(img image.Image, r image.Rectangle, rgbs [][3]uint8, d int) int {
	n := 0
	for _, c := range rgbs {
		n += near(img, r, c, d)
	}
	return n
}

// measureCPU presses the CPU's Measure here (the fourth stop of Tab after
// a pick: this GPU, its Measure here, the CPU, its Measure here), waits
// for the measured line under the CPU (its green words; a failed trial's
// orange line fails the test), keeps the page (windows-wizard-placement-
// measured), then scrolls down by the wheel to the "Time per picture"
// chart (windows-wizard-placement-chart). The figures themselves are read
// from the settings after Apply (measuredKept).
func (g *gui) measureCPU(wz win, img *image.Image) {
	g.t.Helper()
	g.focus(wz)
	before, _ := g.screenshot()
	if n := nearAny(before, wz.rect(), successGreen, wordsNear); n > 20 {
		g.t.Errorf("the Pictures page shows measured (green) words before any trial (%d pixels)", n)
	}
	g.key("Tab", "Tab", "Tab", "Tab", "space") // the CPU's Measure here
	failed := false
	g.untilFor(2*time.Minute, "the CPU's measured figures on the Pictures page", func() bool {
		now, p := g.screenshot()
		if nearAny(now, wz.rect(), warningOrange, wordsNear) > 100 {
			g.t.Errorf("the CPU's trial picture failed: the page says why in %s", p)
			failed = true
			return true
		}
		return nearAny(now, wz.rect(), successGreen, wordsNear) > 100
	})
	*img = g.settled("the Pictures page after the trial", wz.rect(), before)
	if failed {
		g.keepShot("wizard-placement-measure-failed")
		return
	}
	g.keepShot("wizard-placement-measured")
	// The wheel over the options scrolls the page to its chart.
	g.x("mousemove", strconv.Itoa(wz.x+wz.w/2), strconv.Itoa(wz.y+wz.h/2))
	for i := 0; i < 30; i++ {
		g.x("click", "5")
	}
	*img = g.settled("the Pictures page scrolled to its chart", wz.rect(), *img)
	g.keepShot("wizard-placement-chart")
}

// measuredKept checks, after Apply, that the companion settings hold the
// CPU's trial (what the Pictures page showed as "... per picture, measured
// here · start ...") and no other place's (only the CPU was measured),
// and logs the figures.
func (g *gui) measuredKept() {
	g.t.Helper()
	st, err := settings.Load(g.w.Drive(`ProgramData\StrataCompanion\settings.json`))
	if err != nil {
		g.t.Errorf("the companion settings after Apply: %v", err)
		return
	}
	m := st.LastMeasured(settings.PlacementCPU)
	if m == nil {
		g.t.Errorf("Apply kept no CPU trial in the settings (the Pictures page measured one): %+v", st.Measured)
		return
	}
	if err := m.Check(); err != nil || !strings.HasPrefix(m.Device, "this PC's CPU") {
		g.t.Errorf("the CPU trial kept: %+v (%v)", m, err)
	}
	for _, p := range []settings.Placement{settings.PlacementGPU, settings.PlacementRemote} {
		if o := st.LastMeasured(p); o != nil {
			g.t.Errorf("a %s trial was kept, though only the CPU's Measure here was pressed: %+v", p, o)
		}
	}
	g.t.Logf("the Pictures page's measured line: %s per picture, measured here · start %s (on %s)", settings.Secs(m.PictureS), settings.Secs(m.StartS), m.Device)
}
