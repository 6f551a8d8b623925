//go:build !windows && !linux

package supervisor

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}

// No guard outside Linux (no parent-death signal to pair it with); macOS
// runs the service under launchd, which ends the job's processes.
type guard struct{}

func startGuard(int) *guard { return nil }
func (*guard) release()     {}
