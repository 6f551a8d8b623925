// Package fserr turns an error from writing a file into its real cause, in
// words a person can act on: a full disk is "the disk holding <folder> is
// full", not "run it again as an administrator"; a permission error asks for
// an administrator only when we are not one already; a read-only file system
// says so.
//
// Use it wherever the companion writes: the service's state and log folders
// (`run`), the companion settings and the Strata config (the backend), the
// relay's results. Wrap the error where the path is known:
//
//	if err := atomicfile.Write(p, b, 0o644); err != nil {
//		return fserr.Explain(err, p)
//	}
//
// The result keeps the original error (errors.Is(err, syscall.ENOSPC) still
// holds) and its message ends with it in parentheses.
package fserr

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Cause is what went wrong, as far as the error tells.
type Cause int

const (
	Other    Cause = iota
	DiskFull       // ENOSPC, EDQUOT; Windows ERROR_DISK_FULL, ERROR_HANDLE_DISK_FULL
	Denied         // EACCES, EPERM; Windows ERROR_ACCESS_DENIED
	ReadOnly       // EROFS; Windows ERROR_WRITE_PROTECT
)

// Error is a write error with its cause in words.
type Error struct {
	Cause Cause
	Path  string // the file or folder being written
	Err   error  // the original error
	msg   string
}

func (e *Error) Error() string { return e.msg + " (" + e.Err.Error() + ")" }
func (e *Error) Unwrap() error { return e.Err }

// Elevated reports whether this process runs as root / an elevated
// administrator (a variable so tests can pretend either way).
var Elevated = elevated

// CauseOf classifies err.
func CauseOf(err error) Cause {
	switch {
	case err == nil:
		return Other
	case isFull(err):
		return DiskFull
	case isReadOnlyFS(err):
		return ReadOnly
	case isDenied(err):
		return Denied
	}
	return Other
}

// Explain returns err with its real cause in words when it is a full disk,
// a refused permission or a read-only file system, writing path (a file or
// a folder); other errors (and nil, and an already explained error) are
// returned as they are.
func Explain(err error, path string) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	c := CauseOf(err)
	var msg string
	switch c {
	case DiskFull:
		msg = fmt.Sprintf("the disk holding %s is full: free some space there, then try again", folder(path))
	case ReadOnly:
		msg = fmt.Sprintf("%s is on a read-only file system: make it writable (remount it read-write) or choose another folder", folder(path))
	case Denied:
		if Elevated() {
			msg = fmt.Sprintf("%s cannot be written even by an administrator: check its owner, its permissions and whether it is marked read-only or locked by another program", path)
		} else {
			msg = fmt.Sprintf("%s cannot be written by this account: run the command again as an administrator (sudo, or an elevated prompt), or as the service's account", path)
		}
	default:
		return err
	}
	return &Error{Cause: c, Path: path, Err: err, msg: msg}
}

// folder is path's folder when path looks like a file (has an extension
// or does not end in a separator); the folder itself otherwise.
func folder(path string) string {
	if filepath.Ext(path) != "" {
		return filepath.Dir(path)
	}
	return path
}
