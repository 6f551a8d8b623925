package atomicfile

import "os"

// syncDir is a no-op on Windows: folders cannot be opened for flushing there,
// and MoveFileEx (os.Rename) with the data already flushed is the durable path.
func syncDir(string) {}

// isUnsupported: Windows has no Unix modes; Chmod there only toggles read-only.
func isUnsupported(error) bool { return true }

// keepOwner: a replacing file on Windows is created by this process's
// account; the folder's inherited access list decides who may use it.
func keepOwner(*os.File, os.FileInfo) {}
