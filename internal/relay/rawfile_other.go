//go:build !linux

package relay

import (
	"io"
	"os"
)

// resultWriter: see rawfile_linux.go; elsewhere the file's own Write.
func resultWriter(f *os.File) io.Writer { return f }
