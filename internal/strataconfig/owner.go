package strataconfig

import (
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/asowner"
)

// A Strata config, its backups and the folder holding them are usually a
// normal account's while the service runs as root: every read and write
// here goes through asowner with the rights of the folder's owner (no link
// followed in the owner's folder, only a regular file, never blocking, at
// most asowner.ConfigLimit, and only what the owner could read; what is
// written belongs to the owner). In root's own folders, root's own rights.

// ownerFor is the account whose rights reading or writing path uses (nil:
// this process's own).
func ownerFor(path string) *account.Account {
	a, _ := asowner.For(filepath.Dir(path))
	return a
}

// ReadFile reads a config or a backup of one at path as its folder's
// owner (see asowner.ReadFile).
func ReadFile(path string) ([]byte, error) {
	return asowner.ReadFile(path, asowner.ConfigLimit, ownerFor(path))
}

// RealPath is the file abs names, not a link to it (a rename would replace
// the link with a plain file) - only with this process's own rights: in an
// owner's folder a link is not followed at all (reading it is refused).
func RealPath(abs string) string {
	if ownerFor(abs) == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
	}
	return abs
}

// writeAsOwner replaces path as its folder's owner (asowner.WriteFile).
func writeAsOwner(path string, data []byte, perm os.FileMode, check func() error) error {
	return asowner.WriteFile(path, data, perm, ownerFor(path), check)
}
