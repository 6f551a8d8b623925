// Package account answers "who" for the companion with the OS's help: whose
// a folder is (the install's owner), whether this process is privileged
// (root, an administrator, SYSTEM), which account may run Strata's server,
// and files only the privileged accounts and one named account may read (the
// control API's operator and relay tokens).
//
// The rule it serves (docs/security.md): a privileged service never runs
// code from a folder an unprivileged account can change, and it answers
// writes only to the install's owner and the administrators.
package account

import (
	"fmt"
	"os"
	"path/filepath"
)

// Account is a local account.
type Account struct {
	Name string // "ann" (Linux), `PC\ann` (Windows)
	// UID, GID and Groups: the account's ids on Unix (unused on Windows).
	UID, GID uint32
	Groups   []uint32
	Home     string
	// SID is the account's security identifier on Windows ("" on Unix).
	SID string
	// Privileged: root, or (Windows) SYSTEM or the Administrators group.
	Privileged bool
}

func (a *Account) String() string {
	if a == nil {
		return "the administrators"
	}
	if a.SID != "" {
		return a.Name
	}
	return fmt.Sprintf("%s (uid %d)", a.Name, a.UID)
}

// ServerRefusedError says why a privileged service will not run Strata's
// server from a folder, and what fixes it.
type ServerRefusedError struct {
	Root   string
	Reason string // what is wrong, in words
	Fix    string // what to do
}

func (e *ServerRefusedError) Error() string {
	return fmt.Sprintf("the service will not run Strata from %s with its own (administrator) rights: %s. %s", e.Root, e.Reason, e.Fix)
}

// tokenTemp is a new temporary name beside path.
func tokenTemp(path string) string {
	return filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.tmp-%d", filepath.Base(path), os.Getpid()))
}

// replacePrivate is WritePrivate's one way to write, on every OS: a new
// temporary file beside path, created with perm, is handed to protect (which
// restricts who may read it: its mode and owner, or its access list) before
// a byte of data is written, then renamed over path. On any failure the
// temporary file is removed and path is left as it was.
func replacePrivate(path string, data []byte, perm os.FileMode, protect func(f *os.File, tmp string) error) error {
	tmp := tokenTemp(path)
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := protect(f, tmp); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	ok = true
	return nil
}

// PrivateSDDL is the access list of a file only SYSTEM, the Administrators
// and the account sid ("" for none) may read (Windows): protected, so
// nothing is inherited from the folder (%ProgramData% lets Users read).
func PrivateSDDL(sid string) string {
	s := "D:P(A;;FA;;;SY)(A;;FA;;;BA)"
	if sid != "" {
		s += "(A;;FR;;;" + sid + ")"
	}
	return s
}

// LockSDDL is a lock file's access list (Windows): SYSTEM, the
// Administrators and the file's maker (OWNER RIGHTS), no one else.
const LockSDDL = "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;OW)"
