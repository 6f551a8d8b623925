package atomicfile

// syncDir is a no-op on Windows: folders cannot be opened for flushing there,
// and MoveFileEx (os.Rename) with the data already flushed is the durable path.
func syncDir(string) {}

// isUnsupported: Windows has no Unix modes; Chmod there only toggles read-only.
func isUnsupported(error) bool { return true }
