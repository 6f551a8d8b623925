//go:build linux

package testenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Display is a private X server with a session bus, for GUI tests.
type Display struct {
	Name       string   // ":N"
	RuntimeDir string   // private XDG_RUNTIME_DIR (mode 0700)
	BusAddress string   // DBUS_SESSION_BUS_ADDRESS
	Env        []string // os.Environ() with DISPLAY, XDG_RUNTIME_DIR, the bus, and a private HOME and XDG_* folders set
}

// StartDisplay starts Xvfb (picking a free display number itself) and a
// dbus session bus, both stopped when t ends.
func StartDisplay(t testing.TB, width, height int) *Display {
	t.Helper()
	bins := LookPath(t, "Xvfb", "dbus-daemon")
	rd := t.TempDir()
	os.Chmod(rd, 0o700)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	x := exec.Command(bins[0], "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", width, height), "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w}
	if err := x.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	// SIGTERM, not a kill: Xvfb then removes its /tmp/.X<n>-lock and
	// /tmp/.X11-unix/X<n>, which a killed one leaves behind.
	t.Cleanup(func() { stopGently(x, 5*time.Second) })
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	var name string
	select {
	case n := <-num:
		if n == "" {
			t.Fatal("Xvfb did not report a display number")
		}
		name = ":" + n
	case <-time.After(20 * time.Second):
		t.Fatal("Xvfb did not start within 20 s")
	}

	sock := filepath.Join(rd, "bus")
	disp := &Display{Name: name, RuntimeDir: rd, BusAddress: "unix:path=" + sock}
	// What runs on the display (window manager, tray host, fyne, mesa, wine)
	// and what the bus starts (at-spi, dconf) write their caches and settings
	// into a home of its own, never the real one.
	home := filepath.Join(rd, "home")
	os.MkdirAll(home, 0o700)
	private := []string{"DISPLAY=" + name, "XDG_RUNTIME_DIR=" + rd, "DBUS_SESSION_BUS_ADDRESS=" + disp.BusAddress,
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
	for _, kv := range os.Environ() {
		k := kv[:strings.IndexByte(kv, '=')+1]
		replaced := false
		for _, p := range private {
			replaced = replaced || strings.HasPrefix(p, k)
		}
		if !replaced {
			disp.Env = append(disp.Env, kv)
		}
	}
	disp.Env = append(disp.Env, private...)

	d := exec.Command(bins[1], "--session", "--nofork", "--address=unix:path="+sock)
	d.Env = disp.Env
	if err := d.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	return disp
}

// stopGently sends SIGTERM, waits up to grace, then kills.
func stopGently(c *exec.Cmd, grace time.Duration) {
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	if c.Process.Signal(syscall.SIGTERM) == nil {
		select {
		case <-done:
			return
		case <-time.After(grace):
		}
	}
	c.Process.Kill()
	<-done
}
