//go:build !windows

package elevate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// run runs exe through pkexec, which asks for an administrator's
// password with the desktop's polkit agent. Without pkexec (or without an
// agent to ask) the error gives the sudo command to run in a terminal.
func run(ctx context.Context, exe string, args []string) error {
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
		return ErrDeclined // the password dialog was dismissed
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
