//go:build !windows

package agent

import (
	"os"
	"syscall"
)

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// scratchOwner is a file with the agent's start time in its scratch folder
// (Windows only: pids there are reused at once, wine's at least as fast).
const scratchOwner = ".owner"

func holdScratch(string) func() { return func() {} }

// scratchOwned: the folder's agent (by the pid in its name) still runs.
func scratchOwned(dir string, pid int) bool { return pid == os.Getpid() || processAlive(pid) }
