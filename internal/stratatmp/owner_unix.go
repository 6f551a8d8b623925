//go:build !windows

package stratatmp

import (
	"os"
	"syscall"
)

// ownedBy: fi (from Lstat) belongs to uid.
func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}
