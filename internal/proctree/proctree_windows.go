//go:build windows

// Package proctree starts a helper program so that it and everything it
// started can be ended at once (nvidia-smi and its wrappers, a trial's
// encoder): one definition for every caller.
package proctree

import (
	"os/exec"
	"strconv"
	"syscall"
)

// createNoWindow keeps a helper from opening a console window when a GUI
// program (the tray, the wizard) runs it.
const createNoWindow = 0x08000000

// Prepare hides cmd's console window. Call before Start.
func Prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: createNoWindow}
}

// Kill ends cmd and whatever it started.
func Kill(cmd *exec.Cmd) {
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
