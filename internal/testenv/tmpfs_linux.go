package testenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallDisk mounts a tmpfs of size bytes (rounded up to pages) on a fresh
// folder under t.TempDir() and unmounts it when t ends: a disk that a test
// can fill. It needs root (skipped otherwise, failed in strict mode).
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	Root(t)
	dir := filepath.Join(t.TempDir(), "small-disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+itoa(size)); err != nil {
		Skip(t, "cannot mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes into dir until its disk is full (ENOSPC), leaving the file
// it wrote (name .fill) there.
func Fill(t testing.TB, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".fill"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{'x'}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	// Pages may still be free for less than a chunk: fill them byte-wise.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

func itoa(n int) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
