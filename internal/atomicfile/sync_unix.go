//go:build !windows

package atomicfile

import "os"

// syncDir flushes a folder's entries so a rename in it is durable. Errors are
// ignored: some file systems refuse to fsync a folder, and the data itself is
// already safe.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func isUnsupported(error) bool { return false }
