//go:build !windows

package desktop

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrAlreadyRunning means another tray holds the session's lock.
var ErrAlreadyRunning = errors.New("a Strata Companion tray is already running in this session")

// Lock takes the one-tray-per-session lock: an flock on a file in
// $XDG_RUNTIME_DIR (per user and per login session; the kernel drops the
// lock when the process ends, even on a crash, so there is no stale lock).
// Keep the returned file open for the life of the tray.
func Lock() (io.Closer, error) {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("strata-companion-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	p := filepath.Join(dir, "strata-tray.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the tray lock %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrAlreadyRunning
		}
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return f, nil
}
