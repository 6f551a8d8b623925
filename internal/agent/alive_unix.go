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

// ownRealDir: fi (from Lstat) is a folder, not a link, of this process's
// account.
func ownRealDir(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.Mode().IsDir() && ok && st.Uid == uint32(os.Geteuid())
}
