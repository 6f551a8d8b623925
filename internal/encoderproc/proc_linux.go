package encoderproc

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the encoder when the agent dies, however
// it dies (killed, or its ssh session torn down): no orphan holds the GPU.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func afterStart(*exec.Cmd) func() { return nil }
