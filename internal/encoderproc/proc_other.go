//go:build !linux && !windows

package encoderproc

import "os/exec"

// Elsewhere (macOS, BSD) there is no parent-death signal: the agent's own
// cleanup (QUIT, then kill) on session end is what ends the encoder.
func setProcAttr(*exec.Cmd) {}

func afterStart(*exec.Cmd) func() { return nil }
