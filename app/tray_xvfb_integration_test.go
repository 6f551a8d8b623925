//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/service/controltest"
)

// The real tray, built and started under Xvfb with a session bus and a tray
// host (trayer), against the stand-in control API. Its menu is read and
// clicked over DBus (com.canonical.dbusmenu, as every StatusNotifier host
// does), notifications arrive at a stand-in freedesktop notification service
// on the same bus, and a screenshot of the opened menu is taken with xdotool
// and ImageMagick. STRATA_UPDATE_DOCS=1 writes it to docs/tray-menu.png.
func TestRealTrayUnderXvfb(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb, dbus, trayer and the real tray")
	}
	bins := testenv.LookPath(t, "trayer", "xdotool", "import", "convert")
	trayer, xdotool := bins[0], bins[1]
	importBin, convertBin := "/usr/bin/import", "/usr/bin/convert" // another convert may come first on PATH
	for _, p := range []string{importBin, convertBin} {
		if _, err := os.Stat(p); err != nil {
			testenv.Skip(t, p+" is missing (install imagemagick)")
		}
	}
	disp := testenv.StartDisplay(t, 1024, 600)
	dir := t.TempDir()

	exe := testenv.Program(t, ".", testenv.BuildOptions{CGO: true, Name: "strata-tray", Flags: []string{"-trimpath"}})

	// The stand-in service, in a realistic state, and the files a running
	// service leaves for its clients.
	now := time.Now()
	// The paired second PC comes in the state's settings, as the service
	// sends them (the tray reads no settings file).
	st := realistic(now)
	st.Settings = controlapi.ViewOf(&settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "gpu-laptop", User: "strata"}})
	api := controltest.NewService(t, st)
	api.SetConfigs(controlapi.ConfigList{StrataRoot: "/opt/strata", Running: "/opt/strata/strata-iq2_xs.json", Configs: []controlapi.ConfigEntry{
		{Path: "/opt/strata/strata-coder-iq1_m.json", Tag: "coder-iq1_m", ModelName: "Qwen3-Coder IQ1_M", Ready: true},
		{Path: "/opt/strata/strata-iq2_xs.json", Tag: "iq2_xs", ModelName: "Qwen3.6-35B-A3B IQ2_XS", Ready: true, Running: true},
		{Path: "/opt/strata/strata-iq3_s.json", Tag: "iq3_s", Problem: "the model file /opt/strata/models/iq3_s.gguf does not exist"},
	}})
	home := filepath.Join(dir, "home")
	api.WriteHome(t, home)

	// A stand-in zenity that answers "Continue" and records the question
	// (the real one needs a person to click).
	fakeBin := filepath.Join(dir, "bin")
	os.MkdirAll(fakeBin, 0o755)
	asked := filepath.Join(dir, "zenity-asked")
	testenv.WriteExecutable(filepath.Join(fakeBin, "zenity"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >> "+asked+"\nexit 0\n"))

	env := append([]string(nil), disp.Env...)
	env = setEnv(env, "PATH", fakeBin+":"+os.Getenv("PATH"))
	env = setEnv(env, "STRATA_COMPANION_HOME", home)
	env = setEnv(env, "XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	env = setEnv(env, "XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	env = setEnv(env, "HOME", dir)

	bus, err := dbus.Connect(disp.BusAddress)
	if err != nil {
		t.Fatalf("connecting to the test's session bus: %v", err)
	}
	defer bus.Close()
	notes := &notificationServer{}
	if err := notes.export(bus); err != nil {
		t.Fatal(err)
	}

	tr := exec.Command(trayer, "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32", "--transparent", "false")
	tr.Env = env
	if err := tr.Start(); err != nil {
		t.Fatalf("starting trayer: %v", err)
	}
	t.Cleanup(func() { tr.Process.Kill(); tr.Wait() })

	var trayLog bytes.Buffer
	tray := exec.Command(exe)
	tray.Env, tray.Stdout, tray.Stderr = env, &syncWriter{w: &trayLog}, &syncWriter{w: &trayLog}
	if err := tray.Start(); err != nil {
		t.Fatalf("starting strata-tray: %v", err)
	}
	trayDone := make(chan error, 1)
	go func() { trayDone <- tray.Wait() }()
	defer func() {
		tray.Process.Kill()
		<-trayDone
		if t.Failed() {
			t.Logf("strata-tray's output:\n%s", trayLog.String())
		}
	}()

	name := findTray(t, bus)
	menu := func() []menuItem { return getLayout(t, bus, name) }
	waitMenu := func(what string, ok func([]menuItem) bool) []menuItem {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			m := menu()
			if ok(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("the tray's menu never showed %s; it shows:\n%s", what, dumpMenu(m))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// 1. The status lines and choices for the realistic state.
	m := waitMenu("the ready state", func(m []menuItem) bool { return hasLabel(m, "Strata: ready · Qwen3.6-35B-A3B IQ2_XS · since ") })
	for _, want := range []string{
		"Vision: second PC · encoder ready · last picture",
		"Second PC gpu-laptop: reachable · 1.3 ms · 5.7 GiB VRAM free",
		"Vision: this GPU", "Vision: CPU", "Vision: second PC (gpu-laptop)", "Vision: off",
		"Restart Strata", "Open Strata in the browser", "View logs", "Open setup...", "Start tray at login", "Quit tray",
	} {
		it, ok := findPrefix(m, want)
		if strings.HasPrefix(want, "Vision: ") && !strings.Contains(want, "·") {
			it = choice(m, want)
			ok = it.toggle >= 0
		}
		if !ok || !it.visible {
			t.Errorf("no visible item %q in:\n%s", want, dumpMenu(m))
		}
	}
	if it, _ := findPrefix(m, "Strata: ready"); it.enabled {
		t.Error("a status line is clickable")
	}
	if it := choice(m, "Vision: second PC (gpu-laptop)"); it.toggle != 1 {
		t.Errorf("the remote choice is not checked: %+v", it)
	}
	if it := choice(m, "Start tray at login"); it.toggle != 0 {
		t.Error("Start tray at login is on although nobody turned it on")
	}
	if title := sniProp(t, bus, name, "Title"); !strings.HasPrefix(title, "Strata: ready · Qwen3.6-35B-A3B IQ2_XS · vision on the second PC (gpu-laptop), encoder ready") {
		t.Errorf("tooltip (SNI Title) = %q", title)
	}
	if label := sniProp(t, bus, name, "XAyatanaLabel"); label != "" {
		t.Errorf("the panel label is %q; the status belongs in the tooltip, not beside the icon", label)
	}

	// 2. One tray per session: a second start exits at once, quietly.
	second := exec.Command(exe)
	second.Env = env
	out, err := second.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "already running") {
		t.Errorf("a second tray: %v, %q", err, out)
	}

	// 3. The screenshot of the opened menu.
	screenshot(t, env, xdotool, importBin, convertBin, filepath.Join(dir, "tray-menu.png"))

	// 4. The second PC goes away: the menu, the tooltip and exactly one
	// notification say so.
	api.Change(func(s *controlapi.State) {
		s.Remote.Reachable, s.Remote.Reason, s.Remote.Since = false, "connection timed out", time.Now()
	}, events.Event{Kind: events.RemoteUnreachable})
	waitMenu("the second PC down", func(m []menuItem) bool {
		return hasLabel(m, "Second PC gpu-laptop: not reachable (connection timed out)")
	})
	if title := sniProp(t, bus, name, "Title"); !strings.Contains(title, "not reachable: text only") {
		t.Errorf("tooltip with the second PC down: %q", title)
	}
	got := notes.wait(t, 1)
	if got[0].summary != "Pictures unavailable: second PC not reachable" || !strings.Contains(got[0].body, "connection timed out") ||
		got[0].app != "Strata Companion" {
		t.Errorf("notification %+v", got[0])
	}

	// 5. A click on "Vision: CPU": confirmed (stand-in zenity), posted to the
	// service, progress shown.
	api.OnVision(func(req controlapi.VisionRequest) {
		api.Change(func(s *controlapi.State) {
			s.Server.Phase, s.Server.Detail, s.Server.Since = controlapi.PhaseRestarting, "loading the model", time.Now()
		}, events.Event{Kind: events.ConfigChanged}, events.Event{Kind: events.ServerRestarting})
	})
	cpu := choice(menu(), "Vision: CPU")
	click(t, bus, name, cpu.id)
	waitMenu("the switch in progress", func(m []menuItem) bool { return hasLabel(m, "Switching vision to the CPU: loading the model...") })
	// The toolkit ticks a check box when clicked; the tray puts the tick back
	// where the service says vision runs until the switch is done.
	m = waitMenu("the check mark still on the second PC", func(m []menuItem) bool {
		c := choice(m, "Vision: CPU")
		r := choice(m, "Vision: second PC (")
		return c.toggle == 0 && r.toggle == 1
	})
	if c := choice(m, "Vision: CPU"); c.enabled {
		t.Errorf("the choices stay clickable while switching:\n%s", dumpMenu(m))
	}
	// A dry run first (does the switch restart Strata?), then the switch.
	posts := api.Posts()
	if len(posts) != 2 || posts[0].Vision == nil || !posts[0].Vision.DryRun || posts[0].Vision.Placement != "cpu" ||
		posts[1].Vision == nil || posts[1].Vision.DryRun || posts[1].Vision.Placement != "cpu" {
		t.Fatalf("the service received %+v, want a dry run and then one POST /v1/vision for cpu", posts)
	}
	if q, _ := os.ReadFile(asked); !bytes.Contains(q, []byte("--question")) || !bytes.Contains(q, []byte("Switching vision to the CPU restarts Strata")) {
		t.Errorf("the confirmation asked: %q", q)
	}

	// The server comes back with vision on the CPU: the progress line goes,
	// the tick moves, and a second notification says Strata is ready.
	api.Change(func(s *controlapi.State) {
		s.Server.Phase, s.Server.Detail, s.Server.Since = controlapi.PhaseReady, "", time.Now()
		s.Vision = controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady}
		s.Remote = nil
	}, events.Event{Kind: events.ServerReady})
	waitMenu("vision on the CPU", func(m []menuItem) bool {
		c := choice(m, "Vision: CPU")
		return c.toggle == 1 && c.enabled && !hasLabel(m, "Switching") && !hasLabel(m, "Second PC")
	})
	if got := notes.wait(t, 2); got[1].summary != "Strata is ready" {
		t.Errorf("second notification %+v", got[1])
	}

	// 6. Start tray at login: only by a click, into the XDG autostart folder.
	// (The toolkit flips a check box by itself on a click; the file is what
	// the tray did.)
	desktopFile := filepath.Join(dir, "config", "autostart", "strata-tray.desktop")
	if _, err := os.Stat(desktopFile); !os.IsNotExist(err) {
		t.Errorf("an autostart entry exists before anyone asked: %v", err)
	}
	auto := choice(menu(), "Start tray at login")
	click(t, bus, name, auto.id)
	waitFile := func(exists bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := os.Stat(desktopFile)
			if (err == nil) == exists {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the autostart entry exists=%v, want %v", err == nil, exists)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFile(true)
	if b, _ := os.ReadFile(desktopFile); !bytes.Contains(b, []byte("Exec="+exe+"\n")) {
		t.Errorf("autostart entry:\n%s", b)
	}
	waitMenu("autostart on", func(m []menuItem) bool { it := choice(m, "Start tray at login"); return it.toggle == 1 })
	click(t, bus, name, auto.id)
	waitFile(false)
	waitMenu("autostart off", func(m []menuItem) bool { it := choice(m, "Start tray at login"); return it.toggle == 0 })

	// 7. The Model submenu lists the configs (the running one ticked, one
	// that cannot run greyed with why) and switches through the service.
	m = waitMenu("the Model submenu", func(m []menuItem) bool { return hasLabel(m, "Model: iq2_xs") })
	parent, _ := findPrefix(m, "Model: iq2_xs")
	coder := choice(m, "coder-iq1_m (Qwen3-Coder IQ1_M)")
	iq2 := choice(m, "iq2_xs (")
	iq3 := choice(m, "iq3_s (not ready: the model file")
	if coder.parent != parent.id || iq2.toggle != 1 || coder.toggle != 0 || !coder.enabled || iq3.enabled || iq3.toggle < 0 {
		t.Fatalf("the Model submenu:\n%s\ncoder %+v iq2 %+v iq3 %+v parent %+v", dumpMenu(m), coder, iq2, iq3, parent)
	}
	for _, it := range m {
		if it.visible && it.parent == parent.id && it.label == "" {
			t.Errorf("an unused model slot shows: %+v", it)
		}
	}
	click(t, bus, name, coder.id)
	waitMenu("the switch to coder", func(m []menuItem) bool {
		return hasLabel(m, "Model: coder-iq1_m") && choice(m, "coder-iq1_m (").toggle == 1
	})
	posts = api.Posts()
	last := posts[len(posts)-1]
	if last.Config == nil || last.Config.Config != "/opt/strata/strata-coder-iq1_m.json" || last.Config.IfRunning != "/opt/strata/strata-iq2_xs.json" {
		t.Fatalf("the service received %+v, want POST /v1/config for coder while iq2_xs ran", last)
	}
	if q, _ := os.ReadFile(asked); !bytes.Contains(q, []byte("Switching the model to coder-iq1_m restarts Strata")) {
		t.Errorf("the model switch did not ask first: %q", q)
	}

	// 8. Quit tray ends the tray (the service is not touched).
	quit, _ := findPrefix(menu(), "Quit tray")
	click(t, bus, name, quit.id)
	select {
	case err := <-trayDone:
		trayDone <- err
		if err != nil {
			t.Errorf("the tray ended with %v after Quit", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the tray did not quit")
	}
	// Only the vision move and the model switch reached the service, each
	// as a dry run (the dialog's words) and then the change.
	var sent []string
	for _, p := range api.Posts() {
		switch {
		case p.Vision != nil:
			sent = append(sent, fmt.Sprintf("vision dry_run=%v", p.Vision.DryRun))
		case p.Config != nil:
			sent = append(sent, fmt.Sprintf("config dry_run=%v", p.Config.DryRun))
		default:
			sent = append(sent, p.Path)
		}
	}
	if want := "vision dry_run=true, vision dry_run=false, config dry_run=true, config dry_run=false"; strings.Join(sent, ", ") != want {
		t.Errorf("the service received %s; want %s (Quit tray sends nothing)", strings.Join(sent, ", "), want)
	}
}

func realistic(now time.Time) controlapi.State {
	return controlapi.State{
		Service: controlapi.ServiceInfo{Version: "0.1.0", Started: now.Add(-3 * time.Hour), PID: 812},
		Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: now.Add(-2*time.Hour - 14*time.Minute), PID: 1290, Port: 8080,
			URL: "http://127.0.0.1:8080/v1", Model: "Qwen3.6-35B-A3B IQ2_XS", Context: 65536, Experts: 3641, ExpertCacheGiB: 6.96},
		Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady,
			LastPicture: now.Add(-4 * time.Minute), LastPictureMS: 2830},
		Remote: &controlapi.RemoteInfo{Host: "gpu-laptop", Reachable: true, RTTms: 1.3, FreeVRAMMiB: 5840, GPU: "NVIDIA GeForce RTX 3060 Laptop GPU", Since: now.Add(-3 * time.Hour)},
		Config: controlapi.ConfigInfo{StrataRoot: "/opt/strata", Path: "/opt/strata/strata-iq2_xs.json", Valid: true},
	}
}

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// --- the menu over DBus -----------------------------------------------------

const (
	sniPath  = "/org/ayatana/NotificationItem/systray"
	menuPath = sniPath + "/Menu"
)

type menuItem struct {
	id      int32
	label   string
	visible bool
	enabled bool
	toggle  int32 // -1: no check box
	sep     bool
	parent  int32 // the submenu it is in (0: the top menu)
}

// findTray asks every connection on the bus for the tray's menu object.
func findTray(t *testing.T, bus *dbus.Conn) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var names []string
		if err := bus.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.HasPrefix(n, ":") || n == bus.Names()[0] {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := bus.Object(n, menuPath).CallWithContext(ctx, "com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Err
			cancel()
			if err == nil {
				return n
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no tray menu appeared on the session bus")
	return ""
}

func getLayout(t *testing.T, bus *dbus.Conn, name string) []menuItem {
	t.Helper()
	var rev uint32
	var root struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	call := bus.Object(name, menuPath).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if err := call.Store(&rev, &root); err != nil {
		t.Fatalf("GetLayout: %v", err)
	}
	var out []menuItem
	var walk func(parent int32, children []dbus.Variant)
	walk = func(parent int32, children []dbus.Variant) {
		for _, c := range children {
			f, ok := c.Value().([]any)
			if !ok || len(f) < 2 {
				t.Fatalf("unexpected layout entry %v", c)
			}
			props, _ := f[1].(map[string]dbus.Variant)
			it := menuItem{id: f[0].(int32), visible: true, enabled: true, toggle: -1, parent: parent}
			if v, ok := props["label"]; ok {
				it.label, _ = v.Value().(string)
			}
			if v, ok := props["visible"]; ok {
				it.visible, _ = v.Value().(bool)
			}
			if v, ok := props["enabled"]; ok {
				it.enabled, _ = v.Value().(bool)
			}
			if v, ok := props["toggle-state"]; ok {
				it.toggle, _ = v.Value().(int32)
			}
			if v, ok := props["type"]; ok && v.Value() == "separator" {
				it.sep = true
			}
			out = append(out, it)
			if len(f) > 2 {
				if sub, ok := f[2].([]dbus.Variant); ok {
					walk(it.id, sub)
				}
			}
		}
	}
	walk(0, root.Children)
	return out
}

func hasLabel(m []menuItem, prefix string) bool {
	it, ok := findPrefix(m, prefix)
	return ok && it.visible
}

func findPrefix(m []menuItem, prefix string) (menuItem, bool) {
	for _, it := range m {
		if strings.HasPrefix(it.label, prefix) {
			return it, true
		}
	}
	return menuItem{}, false
}

// choice finds a check box item (not a status line with the same start).
func choice(m []menuItem, prefix string) menuItem {
	for _, it := range m {
		if it.toggle >= 0 && strings.HasPrefix(it.label, prefix) {
			return it
		}
	}
	return menuItem{toggle: -1}
}

func dumpMenu(m []menuItem) string {
	var b strings.Builder
	for _, it := range m {
		switch {
		case it.sep:
			b.WriteString("  ----\n")
		case !it.visible:
		default:
			fmt.Fprintf(&b, "  [%d] %q enabled=%v toggle=%d\n", it.id, it.label, it.enabled, it.toggle)
		}
	}
	return b.String()
}

func click(t *testing.T, bus *dbus.Conn, name string, id int32) {
	t.Helper()
	err := bus.Object(name, menuPath).Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(int32(0)), uint32(0)).Err
	if err != nil {
		t.Fatalf("clicking item %d: %v", id, err)
	}
}

func sniProp(t *testing.T, bus *dbus.Conn, name, prop string) string {
	t.Helper()
	v, err := bus.Object(name, sniPath).GetProperty("org.kde.StatusNotifierItem." + prop)
	if err != nil {
		t.Fatalf("reading %s: %v", prop, err)
	}
	s, _ := v.Value().(string)
	return s
}

// --- a stand-in freedesktop notification service ------------------------------

type notification struct{ app, summary, body string }

type notificationServer struct {
	mu   sync.Mutex
	got  []notification
	next uint32
}

func (s *notificationServer) export(bus *dbus.Conn) error {
	if err := bus.Export(s, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		return err
	}
	r, err := bus.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		return fmt.Errorf("owning org.freedesktop.Notifications: %v %v", r, err)
	}
	return nil
}

// Notify is the freedesktop method the tray calls.
func (s *notificationServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, notification{app, summary, body})
	s.next++
	return s.next, nil
}

func (s *notificationServer) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

func (s *notificationServer) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "test", "strata", "1", "1.2", nil
}

// wait returns the notifications once there are n, failing on more.
func (s *notificationServer) wait(t *testing.T, n int) []notification {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		got := append([]notification(nil), s.got...)
		s.mu.Unlock()
		if len(got) > n {
			t.Fatalf("%d notifications, want %d: %+v", len(got), n, got)
		}
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications, want %d: %+v", len(got), n, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- the screenshot -------------------------------------------------------------

// screenshot clicks the tray icon in trayer, waits for the menu to be drawn,
// saves the screen's top right corner to out and checks the menu is on it.
func screenshot(t *testing.T, env []string, xdotool, importBin, convertBin, out string) {
	t.Helper()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	// The icon is trayer's only client: the "systray" window.
	var win string
	deadline := time.Now().Add(30 * time.Second)
	for win == "" && time.Now().Before(deadline) {
		cmd := exec.Command(xdotool, "search", "--classname", "^systray$")
		cmd.Env = env
		b, _ := cmd.Output()
		if f := strings.Fields(string(b)); len(f) > 0 {
			win = f[0]
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if win == "" {
		t.Fatal("the tray icon never appeared in trayer")
	}
	// A desktop-like backdrop instead of Xvfb's black (ImageMagick's display
	// paints the root window and exits; its exit code is not meaningful).
	bg := exec.Command(filepath.Join(filepath.Dir(importBin), "display"), "-window", "root", "-size", "1024x600", "gradient:#3b4a5e-#1f2733")
	bg.Env = env
	bg.Run()
	full := filepath.Join(filepath.Dir(out), "before.png")
	run(importBin, "-window", "root", full)
	before := decodePNG(t, full)
	run(xdotool, "mousemove", "--window", win, "16", "15", "click", "1")

	// Wait until the menu is on screen: a large area under the icon changed.
	var after image.Image
	deadline = time.Now().Add(30 * time.Second)
	for {
		run(importBin, "-window", "root", full)
		after = decodePNG(t, full)
		if changed(before, after, image.Rect(600, 40, 1000, 300)) > 0.3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("clicking the tray icon did not open its menu")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // let the menu finish drawing
	run(importBin, "-window", "root", full)
	run(convertBin, full, "-crop", "560x420+464+0", "+repage", out)
	run(xdotool, "key", "Escape")
	if os.Getenv("STRATA_UPDATE_DOCS") == "1" {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "tray-menu.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote docs/tray-menu.png")
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return img
}

// changed is the share of pixels in r that differ between a and b.
func changed(a, b image.Image, r image.Rectangle) float64 {
	n, total := 0, 0
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			total++
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				n++
			}
		}
	}
	return float64(n) / float64(total)
}
