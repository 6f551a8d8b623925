//go:build windows

package measure

import (
	"os/exec"
	"strconv"
	"syscall"
)

// createNoWindow keeps the encoder from opening a console window when the
// wizard (a GUI program) runs a trial.
const createNoWindow = 0x08000000

func prepareTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: createNoWindow}
}

func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// taskkill /T walks the children while the parent still exists.
	tk := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid))
	tk.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: createNoWindow}
	_ = tk.Run()
	_ = cmd.Process.Kill()
}
