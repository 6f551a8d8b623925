//go:build !windows

package desktop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/strata-companion/companion/app/trayctl"
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

// runElevated runs exe through pkexec, which asks for an administrator's
// password with the desktop's polkit agent. Without pkexec (or without an
// agent to ask) the error gives the sudo command to run in a terminal.
func runElevated(ctx context.Context, exe string, args []string) error {
	name := exe
	if p, err := exec.LookPath("strata-service"); err == nil && p == exe {
		name = "strata-service"
	}
	byHand := "sudo " + strings.Join(append([]string{name}, args...), " ")
	pk, err := exec.LookPath("pkexec")
	if err != nil {
		return fmt.Errorf("this desktop has no administrator prompt (pkexec is not installed): run in a terminal: %s", byHand)
	}
	out, err := exec.CommandContext(ctx, pk, append([]string{exe}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 126:
		return trayctl.ErrDeclined // the password dialog was dismissed
	case errors.As(err, &ee) && ee.ExitCode() == 127:
		// Not authorized, or no polkit agent runs in this session.
		return fmt.Errorf("pkexec could not get administrator rights (%s): run in a terminal: %s", serviceError(out), byHand)
	case ctx.Err() != nil:
		return fmt.Errorf("%s did not end in time", byHand)
	}
	if msg := serviceError(out); msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %v", byHand, err)
}
