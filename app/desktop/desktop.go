// Package desktop is what the tray needs from the user's desktop session,
// one file per platform: notifications (freedesktop notification service
// over DBus on Linux, a balloon from the tray icon on Windows), a yes/no
// dialog, opening URLs and folders, starting setup, the "start at login"
// switch, and the one-tray-per-session lock.
package desktop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/strata-companion/companion/internal/elevate"
)

// Desktop implements trayctl.Desktop for this platform.
type Desktop struct{}

// OpenSetup starts strata-setup (next to this program, else on PATH) on page.
func (Desktop) OpenSetup(page string) error {
	exe, err := SetupPath()
	if err != nil {
		return err
	}
	var args []string
	if page != "" {
		args = append(args, "--page", page)
	}
	cmd := exec.Command(exe, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", exe, err)
	}
	// Reap it when it ends; the tray does not wait for setup.
	go cmd.Wait()
	return nil
}

// SetupPath finds strata-setup: beside the running tray first (the installer
// puts them together), then on PATH.
func SetupPath() (string, error) { return findProgram("strata-setup") }

// ServicePath finds strata-service the same way (lending's commands).
func ServicePath() (string, error) { return findProgram("strata-service") }

func findProgram(name string) (string, error) {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s was not found next to strata-tray or on PATH; reinstall Strata Companion", name)
}

// RunElevated runs strata-service with args with administrator rights and
// waits for it (trayctl.Desktop): Windows asks with the UAC prompt, Linux
// with pkexec (polkit's prompt); where neither can ask, the error says what
// to run by hand.
func (Desktop) RunElevated(ctx context.Context, args ...string) error {
	exe, err := ServicePath()
	if err != nil {
		return err
	}
	return elevate.Run(ctx, exe, args...)
}

// Confirm asks a yes/no question with the platform's dialog.
func (Desktop) Confirm(ctx context.Context, title, question string) (yes, asked bool) {
	return confirm(ctx, title, question)
}

// Open opens target (a URL, folder or file) with the default program.
func (Desktop) Open(target string) error { return open(target) }
