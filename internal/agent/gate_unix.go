//go:build !windows

package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// isAgentProcess: pid runs the program self (Linux: /proc/PID/exe; other
// systems without /proc refuse).
func isAgentProcess(pid int, self string) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	return filepath.Clean(exe) == filepath.Clean(self)
}
