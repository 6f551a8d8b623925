//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/testenv"
)

// The real tray on a PC that lends its GPU and runs no service (a gaming
// laptop without Strata): its menu, read over DBus, is lending's alone,
// from the account's own view; "Get a new pairing code..." and "Stop
// lending..." run `strata-service lend code` / `lend stop` through a
// stand-in pkexec, and the menu and the notifications follow.
func TestLenderTrayUnderXvfb(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb, dbus, trayer and the real tray")
	}
	trayer := testenv.LookPath(t, "trayer")[0]
	disp := testenv.StartDisplay(t, 1024, 600)
	dir := t.TempDir()
	exe := testenv.Program(t, ".", testenv.BuildOptions{CGO: true, Name: "strata-tray", Flags: []string{"-trimpath"}})

	// This account's view of lending, as the lender writes it: no valid
	// code (it ran out), one PC paired.
	view := lendshown.File(dir)
	os.MkdirAll(filepath.Dir(view), 0o700)
	write := func(s lendshown.Shown) {
		t.Helper()
		b, _ := json.Marshal(s)
		if err := os.WriteFile(view, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(lendshown.Shown{Name: "gpu-laptop", Code: "ABCD-EFGH", Expires: time.Now().Add(-time.Minute), Paired: []string{"strata-pc"}})
	newView, _ := json.Marshal(lendshown.Shown{Name: "gpu-laptop", Code: "WXYZ-2345", Expires: time.Now().Add(10 * time.Minute), Paired: []string{"strata-pc"}})

	// Stand-ins: zenity answers Continue; pkexec records what it was asked
	// to run and plays strata-service's lend code (a new code in the view)
	// and lend stop (the view gone); strata-service exists on PATH.
	fakeBin := filepath.Join(dir, "bin")
	os.MkdirAll(fakeBin, 0o755)
	asked, ran := filepath.Join(dir, "zenity-asked"), filepath.Join(dir, "pkexec-ran")
	newFile := filepath.Join(dir, "new-view.json")
	os.WriteFile(newFile, newView, 0o600)
	testenv.WriteExecutable(filepath.Join(fakeBin, "zenity"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >> "+asked+"\nexit 0\n"))
	testenv.WriteExecutable(filepath.Join(fakeBin, "pkexec"), []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\n"+
		"case \"$2 $3\" in\n  'lend code') cp "+newFile+" "+view+" ;;\n  'lend stop') rm -f "+view+" ;;\nesac\n"))
	testenv.WriteExecutable(filepath.Join(fakeBin, "strata-service"), []byte("#!/bin/sh\nexit 1\n"))

	env := append([]string(nil), disp.Env...)
	env = setEnv(env, "PATH", fakeBin+":"+os.Getenv("PATH"))
	// No service here: its folder holds no control address.
	env = setEnv(env, "STRATA_COMPANION_HOME", filepath.Join(dir, "companion"))
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
	var m []menuItem
	waitMenu := func(what string, ok func([]menuItem) bool) {
		t.Helper()
		testenv.WaitFor(t, 30*time.Second, what, func() bool { m = getLayout(t, bus, name); return ok(m) })
	}

	// 1. Lending's menu, without Strata's rows.
	waitMenu("the lender's menu", func(m []menuItem) bool {
		return hasLabel(m, "Strata Companion: this PC lends its GPU as gpu-laptop") && hasLabel(m, "Lend this PC's GPU: Get a new pairing code...")
	})
	for _, want := range []string{"  Paired: strata-pc", "Stop lending...", "View logs", "Open setup...", "Start tray at login", "Quit tray"} {
		if !hasLabel(m, want) {
			t.Errorf("no visible item %q in:\n%s", want, dumpMenu(m))
		}
	}
	for _, not := range []string{"Vision: ", "Restart Strata", "Open Strata in the browser", "Strata Companion service"} {
		if hasLabel(m, not) {
			t.Errorf("a lender's menu shows %q:\n%s", not, dumpMenu(m))
		}
	}
	if it, _ := findPrefix(m, "  Paired: "); it.enabled {
		t.Error("the paired line is clickable")
	}
	// Hidden rows between two separators must not leave two lines in a row.
	lastSep := true // the top of the menu counts as one
	for _, it := range m {
		if !it.visible || it.parent != 0 {
			continue
		}
		if it.sep && lastSep {
			t.Errorf("two separators in a row (or one at the top) in:\n%s", dumpMenu(m))
			break
		}
		lastSep = it.sep
	}
	if title := sniProp(t, bus, name, "Title"); title != "Strata Companion: lending this PC's GPU as gpu-laptop" {
		t.Errorf("tooltip (SNI Title) = %q", title)
	}

	// 2. Get a new pairing code: pkexec runs `strata-service lend code`, the
	// menu shows the new code and a notification tells it.
	it, _ := findPrefix(m, "Lend this PC's GPU: Get a new pairing code...")
	click(t, bus, name, it.id)
	waitMenu("the new code", func(m []menuItem) bool { return hasLabel(m, "Lend this PC's GPU: pairing code WXYZ-2345 (until ") })
	if got := notes.wait(t, 1); got[0].summary != "Pairing code WXYZ-2345" || !strings.Contains(got[0].body, "works once, until") {
		t.Errorf("notification %+v", got[0])
	}
	if it, _ := findPrefix(m, "Lend this PC's GPU: pairing code"); it.enabled {
		t.Error("the valid code's line is clickable")
	}

	// 3. Stop lending: asked first, then `strata-service lend stop`; the
	// lending rows go.
	it, _ = findPrefix(m, "Stop lending...")
	click(t, bus, name, it.id)
	waitMenu("lending stopped", func(m []menuItem) bool { return !hasLabel(m, "Stop lending") && !hasLabel(m, "Lend this PC's GPU") })
	if got := notes.wait(t, 2); got[1].summary != "Stopped lending this PC's GPU" {
		t.Errorf("notification %+v", got[1])
	}
	if q, _ := os.ReadFile(asked); !bytes.Contains(q, []byte("Stop lending this PC's GPU? strata-pc can no longer read pictures here")) {
		t.Errorf("the confirmation asked: %q", q)
	}
	b, _ := os.ReadFile(ran)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "strata-service lend code") || !strings.HasSuffix(lines[1], "strata-service lend stop") ||
		!filepath.IsAbs(strings.Fields(lines[0])[0]) {
		t.Errorf("pkexec ran %q, want strata-service (by its full path) lend code, then lend stop", lines)
	}
}
