// Package atomicfile replaces files so that a reader, or a crash, never sees a
// half-written one: the new bytes go to a temporary file in the same folder,
// which is flushed to disk and then renamed over the old file; the folder is
// flushed too so the rename itself survives a power cut.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// beforeRename is a test hook: it runs after the temporary file is complete
// and before it replaces the target. A test makes it fail to prove that a
// failure at that point leaves the old file whole.
var beforeRename = func(tmpPath string) error { return nil }

// Write replaces path with data. perm is used when the file does not exist
// yet; an existing file keeps its mode, and its owner where this process
// may give it (a root service editing a user's Strata config leaves it the
// user's).
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteChecked(path, data, perm, nil)
}

// WriteChecked is Write with a last check: check (when not nil) runs after
// the new bytes are on disk in the temporary file and right before the
// rename; an error from it leaves the target as it is and is returned
// unchanged. A writer uses it to re-read the target at the last moment and
// refuse when someone else changed it since it was read.
func WriteChecked(path string, data []byte, perm os.FileMode, check func() error) (err error) {
	dir := filepath.Dir(path)
	st, statErr := os.Stat(path)
	if statErr == nil {
		perm = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating a temporary file beside %s: %w", path, err)
	}
	if statErr == nil {
		keepOwner(tmp, st)
	}
	tmpPath := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpPath)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmpPath, err)
	}
	if err = tmp.Chmod(perm); err != nil && !isUnsupported(err) {
		return fmt.Errorf("setting the mode of %s: %w", tmpPath, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("flushing %s to disk: %w", tmpPath, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmpPath, err)
	}
	if err = beforeRename(tmpPath); err != nil {
		return err
	}
	if check != nil {
		if err = check(); err != nil {
			return err
		}
	}
	if err = os.Rename(tmpPath, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}
