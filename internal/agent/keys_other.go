//go:build !windows

package agent

import (
	"fmt"
	"os"
	"path/filepath"
)

func defaultKeysFile() (string, bool, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", false, err
	}
	return filepath.Join(home, ".ssh", "authorized_keys"), false, nil
}

func restrictKeysFile(path string, admin bool) error { return os.Chmod(path, 0o600) }

func describeACL(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("mode %o", fi.Mode().Perm()), nil
}

func planACL(admin bool) (string, error) { return "mode 600", nil }
