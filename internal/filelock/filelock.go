// Package filelock is a cross-process lock on a file (flock on Unix,
// LockFileEx on Windows). The lock belongs to the open file: it is released
// when the holder unlocks, closes the file, or dies, so a crashed holder
// never leaves a stale lock behind. The holder may write its PID into the
// file, so whoever is refused can say which process holds it.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrHeld says another open file (another process, or another Lock in this
// one) holds the lock.
var ErrHeld = errors.New("the lock is held")

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// HeldError is returned when the lock is taken; PID is the holder's (0 when
// it did not write one).
type HeldError struct {
	Path string
	PID  int
}

func (e *HeldError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is held by process %d", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is held by another process", e.Path)
}

func (e *HeldError) Is(target error) bool { return target == ErrHeld }

func open(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the folder for the lock file %s: %w", path, err)
	}
	f, err := openPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s (only the account that made it, and the administrators, may): %w", path, err)
	}
	return f, nil
}

// TryLock takes the lock at once or returns a *HeldError naming the holder.
// The lock file is private (0600, or an access list of its maker and the
// administrators): no other account can open it, so none can hold it.
func TryLock(path string) (*Lock, error) {
	for attempt := 0; ; attempt++ {
		f, err := open(path)
		if err != nil {
			return nil, err
		}
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !ok {
			pid := holder(f)
			f.Close()
			return nil, &HeldError{Path: path, PID: pid}
		}
		// A file made private anew (one from before, readable by others)
		// replaced the one this lock is on: lock the new one.
		if !stillNames(f, path) && attempt < 5 {
			unlock(f)
			f.Close()
			continue
		}
		return &Lock{f: f, path: path}, nil
	}
}

// Acquire waits for the lock until ctx ends; then it returns a *HeldError.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	delay := 2 * time.Millisecond
	for {
		l, err := TryLock(path)
		if err == nil || !errors.Is(err, ErrHeld) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// WritePID records this process as the holder (readable with HolderPID).
func (l *Lock) WritePID() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Unlock releases the lock. It does not delete the file: deleting it would
// let two processes lock two different files of the same name.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// HolderPID reads the PID a holder wrote into the lock file (0 when none).
func HolderPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
