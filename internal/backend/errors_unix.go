//go:build !windows

package backend

import (
	"errors"
	"os"
	"syscall"
)

func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// elevated: root may write anything a permission check would refuse.
var elevated = func() bool { return os.Geteuid() == 0 }
