//go:build windows

package backend

import (
	"errors"

	"golang.org/x/sys/windows"
)

func isDiskFull(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}

// elevated: an administrator's elevated token (or LocalSystem).
var elevated = func() bool { return windows.GetCurrentProcessToken().IsElevated() }
