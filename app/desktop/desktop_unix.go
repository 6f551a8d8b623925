//go:build !windows

package desktop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// confirm uses zenity (GNOME and most desktops) or kdialog (KDE) when
// installed: the tray has no window toolkit of its own (fyne must not share a
// process with systray). Both exit 0 for yes and 1 for no.
func confirm(ctx context.Context, title, question string) (yes, asked bool) {
	var cmd *exec.Cmd
	if z, err := exec.LookPath("zenity"); err == nil {
		cmd = exec.CommandContext(ctx, z, "--question", "--title="+title, "--text="+question,
			"--ok-label=Continue", "--cancel-label=Cancel", "--width=420")
	} else if k, err := exec.LookPath("kdialog"); err == nil {
		cmd = exec.CommandContext(ctx, k, "--title", title, "--yesno", question)
	} else {
		return false, false
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, true // Cancel, No, or the dialog closed
	}
	return false, false // no dialog could be shown (no display, killed)
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
