//go:build !windows

package fserr

import (
	"errors"
	"os"
	"syscall"
)

func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

func isDenied(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }

func elevated() bool { return os.Geteuid() == 0 }
