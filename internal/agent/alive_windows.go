package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// scratchOwner is a file in the scratch folder holding its agent's process
// start time: Windows reuses a dead agent's pid at once (wine even more so),
// so a pid alone cannot tell a stale folder from a live one; the pid and its
// start time together can.
const scratchOwner = ".owner"

func holdScratch(dir string) func() {
	if t, ok := processStart(os.Getpid()); ok {
		os.WriteFile(filepath.Join(dir, scratchOwner), []byte(strconv.FormatUint(t, 10)), 0o600)
	}
	return func() {}
}

// scratchOwned: the pid in the folder's name runs and started when the
// owner file says; a folder without one (an older agent's) goes by the pid.
func scratchOwned(dir string, pid int) bool {
	if pid != os.Getpid() && !processAlive(pid) {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, scratchOwner))
	if err != nil {
		return true
	}
	want, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	got, ok := processStart(pid)
	return err != nil || !ok || got == want
}

// processStart is the process's creation time (FILETIME ticks).
func processStart(pid int) (uint64, bool) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, false
	}
	defer windows.CloseHandle(h)
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(h, &c, &e, &k, &u) != nil {
		return 0, false
	}
	return uint64(c.HighDateTime)<<32 | uint64(c.LowDateTime), true
}

// ownRealDir: fi (from Lstat) is a folder, not a link or junction. (The
// account that owns it is its ACL's say: the scratch parent is the
// account's own %TEMP%, which other accounts cannot write.)
func ownRealDir(fi os.FileInfo) bool {
	return fi.Mode().IsDir() && fi.Mode()&(os.ModeSymlink|os.ModeIrregular) == 0
}
