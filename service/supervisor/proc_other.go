//go:build !windows && !linux

package supervisor

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
