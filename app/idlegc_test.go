package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// The tray collects by a memory limit, not by GOGC's doubling and the
// two-minute forced collection; GOGC in the environment wins.
func TestIdleGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	idleGC()
	if p := debug.SetGCPercent(100); p != -1 {
		t.Errorf("GC percent after idleGC = %d, want -1 (off; the memory limit triggers collections)", p)
	}
	if l := debug.SetMemoryLimit(-1); l < 32<<20 || l > 1<<30 {
		t.Errorf("memory limit after idleGC = %d bytes, want the Go memory in use plus 32 MiB", l)
	}

	t.Setenv("GOGC", "100")
	debug.SetMemoryLimit(math.MaxInt64)
	idleGC()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, GC percent = %d, want it left at 100", p)
	}
}
