//go:build !windows

package measure

import (
	"os/exec"
	"syscall"
)

// prepareTree puts the encoder in its own process group, so that a Cancel or
// the bound ends it and anything it started.
func prepareTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
