//go:build windows

package nvsmi

import (
	"os/exec"
	"strconv"
	"syscall"
)

// createNoWindow keeps nvidia-smi from flashing a console window when the
// tray or the wizard (GUI programs) probe.
const createNoWindow = 0x08000000

// prepareTreeKill hides nvidia-smi's console window; killTree ends it and
// whatever it started.
func prepareTreeKill(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: createNoWindow}
}

func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// taskkill /T walks the children while the parent still exists, so it
	// runs before the plain Kill.
	tk := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid))
	tk.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: createNoWindow}
	_ = tk.Run()
	_ = cmd.Process.Kill()
}
