//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"

	"github.com/strata-companion/companion/internal/account"
)

// The locked range lies far past the PID written at the start of the file,
// so a refused process can still read who holds it.
const lockOffset = 1 << 30

func tryLock(f *os.File) (bool, error) {
	ol := &windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return false, nil
	}
	return false, err
}

func unlock(f *os.File) error {
	ol := &windows.Overlapped{Offset: lockOffset}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}

// openPrivate opens path, or makes it with an access list of SYSTEM, the
// Administrators and its maker only (no one else can open it to lock it).
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err := account.SetACL(path, account.LockSDDL); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

// stillNames: the file is never replaced on Windows.
func stillNames(*os.File, string) bool { return true }
