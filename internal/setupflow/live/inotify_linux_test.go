package live_test

import (
	"encoding/binary"
	"strings"
	"syscall"
	"testing"
)

// watchRenames counts the files named name renamed into dir (an atomic
// write's last step) until the returned function is called.
func watchRenames(t *testing.T, dir, name string) func() int {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	return func() int {
		defer syscall.Close(fd)
		n := 0
		buf := make([]byte, 64<<10)
		for {
			got, err := syscall.Read(fd, buf)
			if got <= 0 || err != nil {
				return n
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= got; {
				l := int(binary.LittleEndian.Uint32(buf[off+12:]))
				if strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+l]), "\x00") == name {
					n++
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}
