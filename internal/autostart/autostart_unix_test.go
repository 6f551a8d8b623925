//go:build !windows

package autostart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAutostart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "autostart")
	a := Entry{Dir: dir, Exe: "/opt/Strata Companion/strata-tray"}
	if on, err := a.Enabled(); on || err != nil {
		t.Fatalf("off by default: %v %v", on, err)
	}
	if err := a.Set(true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "strata-tray.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Desktop Entry]\n", "Type=Application\n", `Exec="/opt/Strata Companion/strata-tray"` + "\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("entry lacks %q:\n%s", want, b)
		}
	}
	if on, _ := a.Enabled(); !on {
		t.Error("not enabled after Set(true)")
	}
	// The desktop's own switch (GNOME Tweaks writes these) counts as off.
	os.WriteFile(filepath.Join(dir, "strata-tray.desktop"), append(b, "Hidden=true\n"...), 0o644)
	if on, _ := a.Enabled(); on {
		t.Error("Hidden=true counted as on")
	}
	if err := a.Set(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "strata-tray.desktop")); !os.IsNotExist(err) {
		t.Errorf("entry still there: %v", err)
	}
	if err := a.Set(false); err != nil {
		t.Errorf("turning off twice: %v", err)
	}
}

func TestDesktopQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/strata-tray": "/usr/bin/strata-tray",
		"/opt/a b/tray":        `"/opt/a b/tray"`,
		`/opt/a"b $x/tray`:     `"/opt/a\\"b \\$x/tray"`,
	} {
		if got := desktopQuote(in); got != want {
			t.Errorf("desktopQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
