package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSecondLockIsRefusedAndNamesTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WritePID(); err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(path)
	var he *HeldError
	if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
		t.Fatalf("second lock: %v, want a HeldError", err)
	}
	if he.PID != os.Getpid() || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("holder %d (%v), want %d", he.PID, err, os.Getpid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while held: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.Unlock()
}
