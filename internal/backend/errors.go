package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// explain turns a write failure into words a person can act on: a full disk
// names the folder that is full; a refused write advises running as an
// administrator only when this process is not one already.
func explain(err error, path string) error {
	if err == nil {
		return nil
	}
	var re *RequestError
	var ce *ConflictError
	if errors.As(err, &re) || errors.As(err, &ce) {
		return err
	}
	dir := filepath.Dir(path)
	switch {
	case isDiskFull(err):
		return fmt.Errorf("the disk holding %s is full, so %s could not be saved; nothing was changed: free some space there and try again (%w)", dir, filepath.Base(path), err)
	case errors.Is(err, fs.ErrPermission):
		if elevated() {
			return fmt.Errorf("%s could not be written although this program runs with full rights (%w): check that %s is not read-only (its mode, its owner, a read-only disk) and try again", path, err, dir)
		}
		return fmt.Errorf("%s could not be written (%w): the service owns it; start the service and try again, or run this as an administrator (sudo)", path, err)
	}
	return err
}
