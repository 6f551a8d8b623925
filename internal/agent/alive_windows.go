package agent

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil {
		return false
	}
	return code == 259 // STILL_ACTIVE
}

// scratchOwner is a file a live agent keeps open in its scratch folder:
// Windows reuses a dead agent's pid at once (wine even more so), so a pid
// alone cannot tell a stale folder from a live one. Go opens files without
// FILE_SHARE_DELETE, so the file cannot be deleted while its agent lives.
const scratchOwner = ".owner"

func holdScratch(dir string) func() {
	f, err := os.Create(filepath.Join(dir, scratchOwner))
	if err != nil {
		return func() {}
	}
	return func() { f.Close() }
}

// scratchOwned: its owner file is held open (it cannot be removed); a folder
// without one (an older agent's) goes by the pid.
func scratchOwned(dir string, pid int) bool {
	owner := filepath.Join(dir, scratchOwner)
	if _, err := os.Stat(owner); err != nil {
		return pid == os.Getpid() || processAlive(pid)
	}
	return os.Remove(owner) != nil
}
