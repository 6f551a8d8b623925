//go:build linux

// Package traybench compares the two tray libraries the project could use on
// Linux, github.com/getlantern/systray v1.2.2 (GTK3 + ayatana-appindicator
// through cgo) and fyne.io/systray (pure Go over DBus), with the same small
// tray (./lantern, ./fyne) on two desktops under Xvfb:
//
//   - sni: a StatusNotifier host (gtk-sni-tray-standalone with its own
//     StatusNotifierWatcher), as GNOME's AppIndicator extension, KDE, Xfce,
//     MATE, Cinnamon, LXQt and waybar are;
//   - xembed: only an XEmbed tray (trayer), as i3bar, older panels and wine's
//     own tray are.
//
// For each: whether the icon shows (its colours counted in a screenshot of
// the panel), when (from the program's start), whether its menu is on the
// bus (com.canonical.dbusmenu GetLayout) and a click reaches the program
// (Event "clicked"), whether the hover text is set (the StatusNotifierItem's
// Title or ToolTip; XEmbed: the icon window's name), its RSS; and per library
// the stripped binary's size, whether it builds without cgo, and the shared
// libraries it loads. Run it with bench/tray/run.sh; it skips under -short.
package traybench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/testenv"
)

// result is one start of one library's tray on one desktop.
type result struct {
	lib, host          string
	iconShown          bool
	iconAfter          time.Duration // from the start to the icon's colours in the panel
	iconPixels         int
	menu               bool // GetLayout lists the items
	menuAfter          time.Duration
	clicked            bool
	hover              string // where the hover text was found ("" none)
	rssKiB             int
	registeredWatcher  bool
	stderrFirstProblem string
}

const (
	hoverText = "bench hover text"
	width     = 800
	height    = 200
)

func BenchmarkTrayLibraries(b *testing.B) {
	if testing.Short() {
		b.Skip("starts Xvfb, dbus, tray hosts and cgo-built trays")
	}
	bins := testenv.LookPath(b, "import", "xdotool", "trayer", "gtk-sni-tray-standalone")
	tools := map[string]string{"import": bins[0], "xdotool": bins[1], "trayer": bins[2], "sni": bins[3]}
	runs := 3
	if n := os.Getenv("TRAYBENCH_RUNS"); n != "" {
		fmt.Sscan(n, &runs)
	}
	progs := map[string]string{}
	for _, lib := range []string{"lantern", "fyne"} {
		progs[lib] = testenv.Program(b, "./"+lib, testenv.BuildOptions{CGO: true, Flags: []string{"-trimpath", "-ldflags=-s -w"}})
	}
	ref := iconColour(b)

	var all []result
	for i := 0; i < runs; i++ {
		for _, host := range []string{"sni", "xembed"} {
			for _, lib := range []string{"lantern", "fyne"} {
				r := once(b, tools, progs[lib], lib, host, ref)
				b.Logf("run %d: %+v", i+1, r)
				all = append(all, r)
			}
		}
	}
	fmt.Println(table(all))
	fmt.Println(staticFacts(b, progs))
}

// once starts the desktop, then the tray, and measures.
func once(b *testing.B, tools map[string]string, prog, lib, host string, ref color.Color) result {
	r := result{lib: lib, host: host}
	disp := testenv.StartDisplay(b, width, height)
	bus, err := dbus.Connect(disp.BusAddress)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()

	// A backdrop of one colour, so the panel's own pixels are known.
	var hostCmd *exec.Cmd
	switch host {
	case "sni":
		hostCmd = exec.Command(tools["sni"], "--watcher", "--top", "--end", "--size", "32", "--color", "#3b4a5e")
	case "xembed":
		hostCmd = exec.Command(tools["trayer"], "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32", "--transparent", "false")
	}
	hostCmd.Env = disp.Env
	var hostLog bytes.Buffer
	hostCmd.Stdout, hostCmd.Stderr = &hostLog, &hostLog
	if err := hostCmd.Start(); err != nil {
		b.Fatalf("starting the %s host: %v", host, err)
	}
	defer func() { hostCmd.Process.Kill(); hostCmd.Wait() }()
	// The host is up: its watcher owns its name (sni), or its window maps (xembed).
	if !poll(20*time.Second, func() bool {
		if host == "sni" {
			return hasOwner(bus, "org.kde.StatusNotifierWatcher")
		}
		return xdotoolFinds(disp.Env, tools["xdotool"], "--class", "trayer")
	}) {
		b.Fatalf("the %s host did not come up:\n%s", host, hostLog.String())
	}
	base := count(shot(b, disp.Env, tools["import"]), ref)

	cmd := exec.Command(prog)
	cmd.Env = disp.Env
	out, _ := cmd.StdoutPipe()
	var errb syncBuf
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()

	// The menu on the bus and the icon on the screen, each timed from the
	// start by its own poller (a screenshot takes a while; the bus is asked
	// every 20 ms); at most 15 s. The icon's time is when the first
	// screenshot that shows it was taken.
	var name string
	deadline := start.Add(15 * time.Second)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if n, ok := findMenu(bus, cmd.Process.Pid); ok {
				name, r.menu, r.menuAfter = n, true, time.Since(start)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			at := time.Since(start)
			if n := count(shot(b, disp.Env, tools["import"]), ref) - base; n >= 20 {
				r.iconShown, r.iconAfter, r.iconPixels = true, at, n
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	if r.menu {
		if id, ok := itemID(bus, name, "two"); ok {
			bus.Object(name, menuPath(bus, name)).Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(int32(0)), uint32(0))
			wait := time.After(5 * time.Second)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						break read
					}
					if l == "clicked two" {
						r.clicked = true
						break read
					}
				case <-wait:
					break read
				}
			}
		}
		r.hover = hoverWhere(bus, name)
	}
	if host == "xembed" && r.hover == "" {
		if w := xdotoolWindowName(disp.Env, tools["xdotool"]); strings.Contains(w, hoverText) {
			r.hover = "icon window name"
		}
	}
	if host == "sni" {
		r.registeredWatcher = registered(bus)
	}
	r.rssKiB = rss(cmd.Process.Pid)
	if s := strings.TrimSpace(errb.String()); s != "" {
		r.stderrFirstProblem, _, _ = strings.Cut(s, "\n")
	}
	return r
}

// poll calls ok every 50 ms until it is true or within has passed.
func poll(within time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func hasOwner(bus *dbus.Conn, name string) bool {
	var has bool
	bus.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has)
	return has
}

// menuPaths are where each library exports its dbusmenu.
var menuPaths = []string{"/org/ayatana/NotificationItem/systray/Menu", "/StatusNotifierItem/menu"}

func menuPath(bus *dbus.Conn, name string) dbus.ObjectPath {
	for _, p := range menuPaths {
		if _, err := layout(bus, name, dbus.ObjectPath(p)); err == nil {
			return dbus.ObjectPath(p)
		}
	}
	return ""
}

// findMenu is the tray's connection (the one of process pid) once its
// dbusmenu lists the bench's items.
func findMenu(bus *dbus.Conn, pid int) (string, bool) {
	var names []string
	if bus.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names) != nil {
		return "", false
	}
	for _, n := range names {
		var p uint32
		if !strings.HasPrefix(n, ":") || bus.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, n).Store(&p) != nil || int(p) != pid {
			continue
		}
		for _, p := range menuPaths {
			labels, err := layout(bus, n, dbus.ObjectPath(p))
			if err == nil && labels["one"] != 0 && labels["two"] != 0 && labels["three"] != 0 {
				return n, true
			}
		}
	}
	return "", false
}

// layout is GetLayout's labels (label -> id), the submenu's included.
func layout(bus *dbus.Conn, name string, path dbus.ObjectPath) (map[string]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var rev uint32
	var root struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	call := bus.Object(name, path).CallWithContext(ctx, "com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if err := call.Store(&rev, &root); err != nil {
		return nil, err
	}
	out := map[string]int32{}
	var walk func([]dbus.Variant)
	walk = func(children []dbus.Variant) {
		for _, c := range children {
			f, ok := c.Value().([]any)
			if !ok || len(f) < 2 {
				continue
			}
			props, _ := f[1].(map[string]dbus.Variant)
			if v, ok := props["label"]; ok {
				if s, ok := v.Value().(string); ok {
					out[strings.ReplaceAll(s, "_", "")] = f[0].(int32)
				}
			}
			if len(f) > 2 {
				if sub, ok := f[2].([]dbus.Variant); ok {
					walk(sub)
				}
			}
		}
	}
	walk(root.Children)
	return out, nil
}

func itemID(bus *dbus.Conn, name, label string) (int32, bool) {
	l, err := layout(bus, name, menuPath(bus, name))
	if err != nil {
		return 0, false
	}
	id, ok := l[label]
	return id, ok
}

// sniPaths are where each library exports its StatusNotifierItem.
var sniPaths = []string{"/org/ayatana/NotificationItem/systray", "/StatusNotifierItem"}

// hoverWhere says which StatusNotifierItem property holds the hover text.
func hoverWhere(bus *dbus.Conn, name string) string {
	for _, p := range sniPaths {
		obj := bus.Object(name, dbus.ObjectPath(p))
		if v, err := obj.GetProperty("org.kde.StatusNotifierItem.Title"); err == nil {
			if s, _ := v.Value().(string); strings.Contains(s, hoverText) {
				return "SNI Title"
			}
		}
		if v, err := obj.GetProperty("org.kde.StatusNotifierItem.ToolTip"); err == nil {
			if strings.Contains(fmt.Sprint(v.Value()), hoverText) {
				return "SNI ToolTip"
			}
		}
	}
	return ""
}

// registered: the watcher lists an item.
func registered(bus *dbus.Conn) bool {
	v, err := bus.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher").GetProperty("org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems")
	if err != nil {
		return false
	}
	l, _ := v.Value().([]string)
	return len(l) > 0
}

func xdotoolFinds(env []string, xdotool string, args ...string) bool {
	c := exec.Command(xdotool, append([]string{"search"}, args...)...)
	c.Env = env
	o, _ := c.Output()
	return len(strings.Fields(string(o))) > 0
}

// xdotoolWindowName is the XEmbed icon window's name ("" when none).
func xdotoolWindowName(env []string, xdotool string) string {
	c := exec.Command(xdotool, "search", "--classname", "^lantern$|^fyne$|^systray$")
	c.Env = env
	o, _ := c.Output()
	var names []string
	for _, w := range strings.Fields(string(o)) {
		n := exec.Command(xdotool, "getwindowname", w)
		n.Env = env
		b, _ := n.Output()
		names = append(names, strings.TrimSpace(string(b)))
	}
	return strings.Join(names, " | ")
}

func rss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var n int
			fmt.Sscan(strings.TrimPrefix(l, "VmRSS:"), &n)
			return n
		}
	}
	return 0
}

// shot is the screen's top strip, where both hosts put their panel.
func shot(b *testing.B, env []string, importBin string) image.Image {
	c := exec.Command(importBin, "-window", "root", "-crop", fmt.Sprintf("%dx40+0+0", width), "png:-")
	c.Env = env
	o, err := c.Output()
	if err != nil {
		b.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(o))
	if err != nil {
		b.Fatalf("screenshot: %v", err)
	}
	return img
}

// iconColour is the most frequent opaque colour of the tray-ready icon.
func iconColour(b *testing.B) color.Color {
	img, err := png.Decode(bytes.NewReader(assets.PNG(assets.TrayReady)))
	if err != nil {
		b.Fatal(err)
	}
	n := map[color.NRGBA]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			if c.A == 0xff {
				n[c]++
			}
		}
	}
	var best color.NRGBA
	for c, k := range n {
		if k > n[best] {
			best = c
		}
	}
	return best
}

// count is the number of pixels of img within 24 per channel of c.
func count(img image.Image, c color.Color) int {
	cr, cg, cb, _ := c.RGBA()
	near := func(a, b uint32) bool { d := int(a>>8) - int(b>>8); return d > -24 && d < 24 }
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if near(r, cr) && near(g, cg) && near(bb, cb) {
				n++
			}
		}
	}
	return n
}

// table is the results as Markdown: per library and desktop, the medians.
func table(all []result) string {
	type key struct{ lib, host string }
	groups := map[key][]result{}
	for _, r := range all {
		k := key{r.lib, r.host}
		groups[k] = append(groups[k], r)
	}
	median := func(d []time.Duration) string {
		if len(d) == 0 {
			return "-"
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return fmt.Sprintf("%.0f ms", float64(d[len(d)/2])/1e6)
	}
	var sb strings.Builder
	sb.WriteString("| library | desktop | icon shows | icon after (median) | menu on the bus | menu after (median) | click reaches it | hover text | RSS (median) | registered with the watcher |\n")
	sb.WriteString("| --- | --- | --- | ---: | --- | ---: | --- | --- | ---: | --- |\n")
	for _, host := range []string{"sni", "xembed"} {
		for _, lib := range []string{"lantern", "fyne"} {
			rs := groups[key{lib, host}]
			var icon, menu []time.Duration
			var rs2 []int
			shown, onBus, clicked := 0, 0, 0
			hover := map[string]int{}
			reg := 0
			for _, r := range rs {
				if r.iconShown {
					shown++
					icon = append(icon, r.iconAfter)
				}
				if r.menu {
					onBus++
					menu = append(menu, r.menuAfter)
				}
				if r.clicked {
					clicked++
				}
				if r.registeredWatcher {
					reg++
				}
				h := r.hover
				if h == "" {
					h = "none"
				}
				hover[h]++
				rs2 = append(rs2, r.rssKiB)
			}
			sort.Ints(rs2)
			var hs []string
			for h, k := range hover {
				hs = append(hs, fmt.Sprintf("%s (%d/%d)", h, k, len(rs)))
			}
			sort.Strings(hs)
			regs := "-"
			if host == "sni" {
				regs = fmt.Sprintf("%d/%d", reg, len(rs))
			}
			rssS := "-"
			if len(rs2) > 0 {
				rssS = fmt.Sprintf("%.1f MiB", float64(rs2[len(rs2)/2])/1024)
			}
			fmt.Fprintf(&sb, "| %s | %s | %d/%d | %s | %d/%d | %s | %d/%d | %s | %s | %s |\n", libName(lib), host,
				shown, len(rs), median(icon), onBus, len(rs), median(menu), clicked, len(rs), strings.Join(hs, ", "), rssS, regs)
		}
	}
	return sb.String()
}

func libName(lib string) string {
	if lib == "lantern" {
		return "getlantern/systray v1.2.2"
	}
	return "fyne.io/systray"
}

// staticFacts: per library, the stripped binary's size, whether it builds
// without cgo for Linux and for Windows, and the shared libraries it loads.
func staticFacts(b *testing.B, progs map[string]string) string {
	var sb strings.Builder
	sb.WriteString("| library | binary (stripped) | builds with CGO_ENABLED=0 (linux) | shared libraries (ldd) | GTK |\n| --- | ---: | --- | ---: | --- |\n")
	for _, lib := range []string{"lantern", "fyne"} {
		st, err := os.Stat(progs[lib])
		if err != nil {
			b.Fatal(err)
		}
		nocgo := "yes"
		dir := b.TempDir()
		c := exec.Command("go", "build", "-o", filepath.Join(dir, "x"), "./"+lib)
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := c.CombinedOutput(); err != nil {
			nocgo = "no (" + firstLine(string(o)) + ")"
		}
		l, _ := exec.Command("ldd", progs[lib]).Output()
		libs := strings.Count(string(l), "=>")
		gtk := "no"
		if bytes.Contains(l, []byte("libgtk-3")) {
			gtk = "libgtk-3, libayatana-appindicator3"
		}
		fmt.Fprintf(&sb, "| %s | %.1f MiB | %s | %d | %s |\n", libName(lib), float64(st.Size())/(1<<20), nocgo, libs, gtk)
	}
	return sb.String()
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
