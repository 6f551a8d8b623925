package fserr

import (
	"errors"

	"golang.org/x/sys/windows"
)

func isFull(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}

func isDenied(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED)
}

func isReadOnlyFS(err error) bool { return errors.Is(err, windows.ERROR_WRITE_PROTECT) }

func elevated() bool { return windows.GetCurrentProcessToken().IsElevated() }
