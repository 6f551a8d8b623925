package rawio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read is one read(2) of fd into p (len(p) > 0), retried on EINTR.
func Read(fd uintptr, p []byte) (int, error) {
	return call(unix.SYS_READ, fd, p)
}

// Write is one write(2) of p (len(p) > 0) to fd, retried on EINTR; it may
// write less than p.
func Write(fd uintptr, p []byte) (int, error) {
	return call(unix.SYS_WRITE, fd, p)
}

func call(trap, fd uintptr, p []byte) (int, error) {
	for {
		r, _, e := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}
