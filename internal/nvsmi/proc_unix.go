//go:build !windows

package nvsmi

import (
	"os/exec"
	"syscall"
)

// prepareTreeKill puts the command in its own process group, so that
// killTree ends it and anything it started (a wrapper script's children too).
func prepareTreeKill(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The group outlives its leader while members remain: -pid still
	// reaches the grandchildren after the leader was reaped.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
