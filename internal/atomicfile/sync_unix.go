//go:build !windows

package atomicfile

import (
	"os"
	"syscall"
)

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

// keepOwner gives tmp the owner of the file it replaces (root only may).
func keepOwner(tmp *os.File, old os.FileInfo) {
	sys, ok := old.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 || (sys.Uid == 0 && sys.Gid == 0) {
		return
	}
	_ = tmp.Chown(int(sys.Uid), int(sys.Gid))
}
