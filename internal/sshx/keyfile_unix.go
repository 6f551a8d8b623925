//go:build !windows

package sshx

import "syscall"

// oNonblock keeps open(2) of a FIFO from waiting for a writer.
const oNonblock = syscall.O_NONBLOCK
