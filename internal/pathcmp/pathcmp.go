// Package pathcmp compares file paths as the OS does: the one copy of the
// check the CLI, the daemon, the wizard's service adapter and the install
// finder make when they ask "is this the same config / install folder?".
package pathcmp

import (
	"path/filepath"
	"runtime"
	"strings"
)

// Same reports whether a and b name the same path: both made absolute
// (relative to the working directory) and cleaned, compared
// case-insensitively on Windows. "" matches only "" (an unset path is not
// the working directory). It does not follow links or touch the disk.
func Same(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	if abs, err := filepath.Abs(a); err == nil {
		a = abs
	}
	if abs, err := filepath.Abs(b); err == nil {
		b = abs
	}
	a, b = filepath.Clean(a), filepath.Clean(b)
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
