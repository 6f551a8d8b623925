//go:build !windows

package autostart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-companion/companion/internal/atomicfile"
)

// Entry is the XDG autostart entry ~/.config/autostart/strata-tray.desktop.
// It exists only when the user turned "Start tray at login" on; nothing else
// in the tray creates it.
type Entry struct {
	// Dir is the autostart folder (default $XDG_CONFIG_HOME/autostart).
	Dir string
	// Exe is the program to start (default: this executable).
	Exe string
}

func (a Entry) file() string {
	dir := a.Dir
	if dir == "" {
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			home, _ := os.UserHomeDir()
			cfg = filepath.Join(home, ".config")
		}
		dir = filepath.Join(cfg, "autostart")
	}
	return filepath.Join(dir, "strata-tray.desktop")
}

// Enabled reports whether the entry exists and is not disabled by the
// desktop's own switch (Hidden=true or X-GNOME-Autostart-enabled=false).
func (a Entry) Enabled() (bool, error) {
	b, err := os.ReadFile(a.file())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch strings.ReplaceAll(strings.TrimSpace(line), " ", "") {
		case "Hidden=true", "X-GNOME-Autostart-enabled=false":
			return false, nil
		}
	}
	return true, nil
}

// Set writes or removes the entry.
func (a Entry) Set(on bool) error {
	f := a.file()
	if !on {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
		return nil
	}
	exe := a.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this program's path: %w", err)
		}
	}
	var b bytes.Buffer
	b.WriteString("[Desktop Entry]\nType=Application\nName=Strata Companion tray\n")
	b.WriteString("Comment=Shows what the Strata server and its image encoder are doing\n")
	fmt.Fprintf(&b, "Exec=%s\n", desktopQuote(exe))
	b.WriteString("Icon=strata-companion\nTerminal=false\nX-GNOME-Autostart-enabled=true\n")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(f), err)
	}
	return atomicfile.Write(f, b.Bytes(), 0o644)
}

// desktopQuote quotes an Exec argument as the Desktop Entry spec asks.
func desktopQuote(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\$`") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\\\`, `"`, `\\"`, "`", "\\\\`", "$", `\\$`)
	return `"` + r.Replace(s) + `"`
}
