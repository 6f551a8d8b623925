package asowner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/atomicfile"
)

// Open opens path for reading: a regular file of at most limit bytes
// (limit < 0: any size). With an account (see For), no element of the path
// below the drive may be a link or junction (a reparse point): the service
// does not follow one the owner may have made. Whether the owner could read
// the file is its ACL's say, which this build does not evaluate (see
// docs/security.md).
func Open(path string, limit int64, a *account.Account) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if a != nil {
		for p := abs; ; {
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, err
			}
			// Links and junctions (Go reports both as ModeSymlink); other
			// reparse points (OneDrive's placeholders) are plain files.
			if fi.Mode()&os.ModeSymlink != 0 {
				return nil, &RefusedError{Path: abs, Why: p + " is a link or junction the service does not follow"}
			}
			parent := filepath.Dir(p)
			if parent == p || len(parent) <= 3 {
				break
			}
			p = parent
		}
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	if err := checkRegularWin(abs, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if err := checkRegularWin(abs, fi, limit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CouldRead reports whether path passes Open's checks for a.
func CouldRead(path string, a *account.Account) error {
	f, err := Open(path, -1, a)
	if err != nil {
		return err
	}
	return f.Close()
}

// WriteFile replaces path atomically; with an account, the target must be
// a regular file or absent (never a link). A new file inherits the
// folder's ACL, which gives the owner of the install its rights.
func WriteFile(path string, data []byte, perm os.FileMode, a *account.Account, check func() error) error {
	if a != nil {
		if fi, err := os.Lstat(path); err == nil && (fi.IsDir() || fi.Mode()&os.ModeSymlink != 0) {
			return &RefusedError{Path: path, Why: "it is not a regular file (a link or a folder); the service does not replace it"}
		}
	}
	return atomicfile.WriteChecked(path, data, perm, check)
}

// tokens are the Windows tokens Command took, by command (see Release).
var tokens sync.Map

// Command is name with args in dir, to run as a (nil: as this process,
// with this process's environment plus env): with the token of a's
// signed-in session (account.Token) and that account's own environment,
// then env. While a is not signed in, the command fails to start, saying
// so (Start returns the error). Release closes the token after Wait.
func Command(ctx context.Context, a *account.Account, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if a == nil {
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	tok, err := a.Token()
	if err != nil {
		cmd.Err = fmt.Errorf("running %s as %s: %w", filepath.Base(name), a.Name, err)
		return cmd
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Token: tok}
	base, err := windows.Token(tok).Environ(false)
	if err != nil {
		base = nil
	}
	cmd.Env = append(base, env...)
	tokens.Store(cmd, tok)
	return cmd
}

// CleanEnv is a's environment as Windows makes it for a's token, then env.
func CleanEnv(a *account.Account, env []string) []string { return env }

// Release closes the token Command took for cmd.
func Release(cmd *exec.Cmd) {
	if t, ok := tokens.LoadAndDelete(cmd); ok {
		t.(syscall.Token).Close()
	}
}

// checkRegularWin is checkRegular, with Windows' other reparse points
// (OneDrive's placeholders, deduplicated files: ModeIrregular) taken as
// the plain files they are.
func checkRegularWin(path string, fi os.FileInfo, limit int64) error {
	m := fi.Mode()
	if m&os.ModeIrregular != 0 && m&(os.ModeSymlink|os.ModeDir|os.ModeNamedPipe|os.ModeDevice|os.ModeSocket) == 0 {
		if limit >= 0 && fi.Size() > limit {
			return tooBig(path, limit)
		}
		return nil
	}
	return checkRegular(path, fi, limit)
}
