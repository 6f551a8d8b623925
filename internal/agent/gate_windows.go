package agent

import (
	"errors"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// splitCommand splits a command line as a Windows program does
// (CommandLineToArgvW). What cmd.exe would act on is refused: sshd runs the
// forced command through the login shell, but the client's command reaches
// the gate only in SSH_ORIGINAL_COMMAND, which no shell reads.
func splitCommand(s string) ([]string, error) {
	if strings.ContainsAny(s, "%!^&|<>\r\n") {
		return nil, errors.New("shell syntax is not allowed")
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return windows.DecomposeCommandLine(s)
}

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
