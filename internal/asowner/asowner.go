// Package asowner is the one way the service acts inside a Strata install
// that another account owns. The service runs as root (SYSTEM); the install
// is usually a normal account's. Whatever the service does there it does as
// that account, or with that account's rights only:
//
//   - programs (git, Strata's setup.py through the venv's python, its
//     rollback) run as the owner: Command gives them its uid, gid and
//     groups, its HOME from the account database, and a clean, minimal
//     environment (Windows: the owner's signed-in token);
//   - files the owner controls are read through Open and ReadFile: no
//     symbolic link is followed in a folder the owner (or anyone but root)
//     can change, only a regular file is opened, never blocking on a FIFO,
//     at most a bounded size, and only when the owner could read it too
//     (a hard link to a root-only file is refused);
//   - files the service writes there (configs, backups) are written by
//     WriteFile: beside the target in the same folder, never through a
//     link, and they belong to the owner with the owner's usual mode.
//
// For names the account to act as: nil when this process is not
// privileged, or the folder is root's (or this process's) own: root's own
// power stays for root's own folders. Every function takes that account
// (nil: this process's own rights, and then only the plain checks: regular,
// not blocking, bounded).
package asowner

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/strata-companion/companion/internal/account"
)

// ConfigLimit bounds a Strata config (and its backups): real ones are a
// few KiB.
const ConfigLimit = 4 << 20

// SmallLimit bounds the small files the service reads in an install
// (engine/BUILD.json, setup.py).
const SmallLimit = 4 << 20

// RefusedError says why a file in an install was not opened.
type RefusedError struct {
	Path string
	Why  string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s was not opened: %s", e.Path, e.Why) }

// ErrRefused matches every *RefusedError (errors.Is).
var ErrRefused = errors.New("refused")

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// For is the account to act as inside dir (an install folder): its owner
// when this process is privileged and the owner is a normal account; nil
// otherwise (this process's own rights: not privileged, or dir is root's or
// an administrator's, or this process's own).
func For(dir string) (*account.Account, error) {
	if !account.Privileged() {
		return nil, nil
	}
	own, err := account.OwnerOf(dir)
	if err != nil {
		return nil, err
	}
	if own.Privileged {
		return nil, nil
	}
	if me, err := account.Current(); err == nil && sameAccount(me, own) {
		return nil, nil
	}
	return own, nil
}

func sameAccount(a, b *account.Account) bool {
	if a.SID != "" || b.SID != "" {
		return a.SID == b.SID
	}
	return a.UID == b.UID
}

// ReadFile reads path as Open does, at most limit bytes (a larger file is
// refused, not cut).
func ReadFile(path string, limit int64, a *account.Account) ([]byte, error) {
	f, err := Open(path, limit, a)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooBig(path, limit)
	}
	return b, nil
}

func tooBig(path string, limit int64) error {
	return &RefusedError{Path: path, Why: fmt.Sprintf("it is larger than %d bytes, more than such a file ever holds; move it away", limit)}
}

// ReadFileIn is ReadFile as the account For(dir) names.
func ReadFileIn(dir, path string, limit int64) ([]byte, error) {
	a, err := For(dir)
	if err != nil {
		return nil, err
	}
	return ReadFile(path, limit, a)
}

// checkRegular refuses what is not a regular file of at most limit bytes
// (limit < 0: any size).
func checkRegular(path string, fi os.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Why: fmt.Sprintf("it is not a regular file (%s)", kind(fi.Mode()))}
	}
	if limit >= 0 && fi.Size() > limit {
		return tooBig(path, limit)
	}
	return nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "not a plain file"
}
