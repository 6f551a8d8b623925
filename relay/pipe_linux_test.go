package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The agent's pipes to sshd hold 1 MiB; a file that is not a pipe is left alone.
func TestWidenPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	widenPipes(r, w, f)
	n, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1<<20 {
		t.Errorf("pipe size after widenPipes = %d, want %d (1 MiB; fs.pipe-max-size allows it)", n, 1<<20)
	}
}
