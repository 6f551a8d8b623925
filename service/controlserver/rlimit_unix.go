//go:build !windows

package controlserver

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// fdCeiling caps the descriptor limit asked for (the kernel's nr_open may
// be a billion; a million is far beyond what the bounds let callers hold).
const fdCeiling = 1 << 20

// RaiseFDLimit raises this process's descriptor limit to what the OS
// allows: the soft limit to the hard one, and for root the hard one to the
// kernel's nr_open (at most fdCeiling). It returns the soft limit now in
// force.
func RaiseFDLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	want := rl.Max
	if n := nrOpen(); n > want {
		want = n
	}
	if want > fdCeiling && rl.Max <= fdCeiling {
		want = fdCeiling
	}
	if want > rl.Max {
		// root (CAP_SYS_RESOURCE) may raise the hard limit too
		up := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			return want, nil
		}
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, err
		}
	}
	return rl.Cur, nil
}

// nrOpen is the kernel's ceiling for a process's descriptor limit.
func nrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}
