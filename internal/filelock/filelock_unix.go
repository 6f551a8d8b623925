//go:build !windows

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// openPrivate opens (or makes) path 0600. A lock file another account
// could open (an older 0644 one) is replaced by a private one first: an
// open descriptor of the old one holds nothing then.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	// Only this account can open a 0600 file. (Its owner is not checked:
	// the folder is the service's, so no one else could have made it, and
	// an administrator's CLI must not take over a portable install's lock.)
	if st.Mode().Perm()&0o077 == 0 && st.Mode().IsRegular() {
		return f, nil
	}
	f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	tmp.Chmod(0o600)
	if err := os.Rename(tmp.Name(), path); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// stillNames reports whether path still names f's file.
func stillNames(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
