//go:build !windows

package main

import (
	"os"
	"syscall"
)

// hangupSignal: sshd sends SIGHUP when a session with a terminal ends.
func hangupSignal() os.Signal { return syscall.SIGHUP }
