package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// widenPipes gives the agent's stdin and stdout pipes (to and from sshd)
// 1 MiB instead of 64 KiB where they are pipes: a 1 MiB write of the .sve
// then goes in one piece instead of sixteen hand-offs to sshd, and sshd can
// put a whole picture chunk in before the agent wakes. Best effort: 1 MiB is
// the default fs.pipe-max-size; a refusal leaves the pipe as it was.
func widenPipes(files ...*os.File) {
	for _, f := range files {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
			unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
		}
	}
}
