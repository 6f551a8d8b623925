package relay

import (
	"io"
	"os"

	"github.com/strata-companion/companion/internal/rawio"
)

// resultWriter writes the .sve into its temporary file without telling the
// Go scheduler (a raw write(2)): the file is in the page cache, each write
// takes well under a millisecond, and the relay has nothing else to do
// until it is written. Through os.File.Write each 1 MiB write entered the
// scheduler's syscall state, woke the runtime's sysmon thread and, lasting
// over its 20 us tick, handed the relay's only P to another thread and back
// (bench/relay at 1 Gbit/s: 25.5 -> 23.5 ms of relay CPU per 10.5 MB .sve,
// 290 -> 247 context switches). A disk so slow that a write blocks would
// hold the answer to Strata back just the same either way.
func resultWriter(f *os.File) io.Writer { return rawFile{f} }

type rawFile struct{ f *os.File }

func (w rawFile) Write(p []byte) (int, error) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return w.f.Write(p)
	}
	n := 0
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := rawio.Write(fd, p[n:])
			if e != nil {
				werr = e
				return true
			}
			if m == 0 {
				werr = io.ErrShortWrite
				return true
			}
			n += m
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return n, &os.PathError{Op: "write", Path: w.f.Name(), Err: err}
	}
	return n, nil
}
