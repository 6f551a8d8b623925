package agent

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// isAgentProcess: pid runs the program self.
func isAgentProcess(pid int, self string) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return false
	}
	return strings.EqualFold(filepath.Clean(windows.UTF16ToString(buf[:n])), filepath.Clean(self))
}
