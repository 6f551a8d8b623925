//go:build !windows

// Package proctree starts a helper program so that it and everything it
// started can be ended at once (nvidia-smi and its wrappers, a trial's
// encoder): one definition for every caller.
package proctree

import (
	"os/exec"
	"syscall"
)

// Prepare puts cmd in its own process group, so that Kill ends it and
// anything it started (a wrapper script's children too). Call before Start.
func Prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Kill ends cmd and whatever it started.
func Kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The group outlives its leader while members remain: -pid still
	// reaches the grandchildren after the leader was reaped.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
