package nvsmi

import (
	"github.com/strata-companion/companion/internal/capbuf"

	"github.com/strata-companion/companion/internal/proctree"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// DefaultTimeout bounds one nvidia-smi run. A healthy one answers in well
// under a second; a driver in trouble can hang it for minutes.
const DefaultTimeout = 10 * time.Second

// killGrace is how long a killed nvidia-smi may take to be reaped before
// the caller is let go anyway: one stuck in the kernel (a hung driver
// leaves it in uninterruptible sleep) cannot die, and waiting for it
// would hold the caller as long as the driver hangs.
const killGrace = 2 * time.Second

// maxOutput caps what is kept of nvidia-smi's output: eight GPUs take about
// 1 KB; a binary spewing garbage must not eat memory.
const maxOutput = 1 << 20

// Local runs the nvidia-smi at path. It kills it and everything it started
// when timeout (0: DefaultTimeout) passes or ctx ends, and returns at the
// latest killGrace later whatever the process does: the caller is never
// held past timeout + killGrace.
func Local(path string, timeout time.Duration) Runner {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return func(parent context.Context, args []string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		cmd := exec.Command(path, args...)
		out := capbuf.Buffer{Max: maxOutput}
		cmd.Stdout, cmd.Stderr = &out, &out
		proctree.Prepare(cmd)
		// A grandchild that keeps our pipes open must not hold Wait after
		// the kill.
		cmd.WaitDelay = killGrace
		if err := cmd.Start(); err != nil {
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrStart, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }() // reaps it even after we gave up
		select {
		case err := <-done:
			return out.Bytes(), err
		case <-ctx.Done():
		}
		proctree.Kill(cmd)
		select {
		case <-done:
		case <-time.After(killGrace):
			// Unkillable for now: leave the reaping to the goroutine.
		}
		if parent.Err() != nil {
			return out.Bytes(), fmt.Errorf("cancelled: %w", parent.Err())
		}
		return out.Bytes(), timeoutError{timeout}
	}
}

// timeoutError reads "no answer after 10s" (for people) and is
// context.DeadlineExceeded (for code).
type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string {
	return "no answer after " + e.after.Round(time.Millisecond).String()
}
func (e timeoutError) Unwrap() error { return context.DeadlineExceeded }
