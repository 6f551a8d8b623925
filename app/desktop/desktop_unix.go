//go:build !windows

package desktop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// confirm uses zenity when installed: the tray has no window toolkit of its
// own (fyne must not share a process with systray).
func confirm(ctx context.Context, title, question string) (yes, asked bool) {
	z, err := exec.LookPath("zenity")
	if err != nil {
		return false, false
	}
	cmd := exec.CommandContext(ctx, z, "--question", "--title="+title, "--text="+question,
		"--ok-label=Continue", "--cancel-label=Cancel", "--width=420")
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, true // Cancel or closed
	}
	return false, false // zenity could not show a dialog (no display)
}

func open(target string) error {
	p, err := exec.LookPath("xdg-open")
	if err != nil {
		return fmt.Errorf("cannot open %s: xdg-open is not installed (install xdg-utils)", target)
	}
	cmd := exec.Command(p, target)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening %s: %w", target, err)
	}
	go cmd.Wait()
	return nil
}
