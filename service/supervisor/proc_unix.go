//go:build !windows

package supervisor

import (
	"errors"
	"os/exec"
	"syscall"
)

// sysProc is the server's process group: Strata's engine and encoder are its
// children and share it, so signalling -pid reaches the whole tree (unless a
// child made a group of its own, which Strata's do not).
type sysProc struct {
	guard *guard // ends the group if the supervisor dies first (Linux)
}

func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

func attach(cmd *exec.Cmd) sysProc { return sysProc{guard: startGuard(cmd.Process.Pid)} }

// interrupt is Strata's documented stop: SIGTERM; the server then tells the
// engine QUIT and closes the encoder. Sent to the group so a child that
// ignores its parent still hears it.
func (sysProc) interrupt(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

// kill ends every process left in the group.
func (sysProc) kill(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

// close releases the guard: the group is ended by now.
func (p sysProc) close() { p.guard.release() }
