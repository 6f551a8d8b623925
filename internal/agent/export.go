package agent

import (
	"context"
	"io"
	"time"

	"github.com/strata-companion/companion/internal/framing"
)

// Encoder is one running strata-vision, started and driven as the agent
// drives its own: the relay uses it for pictures read on this PC's CPU. The
// process dies with its parent (a parent-death signal on Linux, a Job
// Object on Windows).
type Encoder struct{ e *encoder }

// ErrCancelled is returned by Request when ctx ended first; the encoder
// should then be stopped (it may still be reading the picture).
var ErrCancelled = errCancelled

// ErrEncoderStopped is returned by Request when the encoder exited.
var ErrEncoderStopped = errEncoderStopped

// StartEncoder runs path with args and waits for READY within timeout;
// its stderr goes to stderr (line by line) and its last line is kept.
func StartEncoder(path string, args []string, stderr io.Writer, timeout time.Duration) (*Encoder, error) {
	e, err := startEncoder(path, args, stderr, timeout)
	if err != nil {
		return nil, err
	}
	return &Encoder{e}, nil
}

// StartEncoderEnv is StartEncoder with an environment (nil: this
// process's); an argument the encoder refuses is dropped (see
// startEncoderEnv) and said on stderr.
func StartEncoderEnv(path string, args, env []string, stderr io.Writer, timeout time.Duration) (*Encoder, error) {
	e, err := startEncoderEnv(path, args, env, stderr, timeout)
	if err != nil {
		return nil, err
	}
	return &Encoder{e}, nil
}

// Where says where the encoder reads pictures, from its start line.
func (x *Encoder) Where(askedGPU bool) framing.Where {
	return Observe(x.e.tail.Start(), x.e.tail.CUDAFailure(), askedGPU)
}

// Args are the arguments it runs with (after any it refused were dropped).
func (x *Encoder) Args() []string { return x.e.cmd.Args[1:] }

// Request sends one request line and waits for its reply line.
func (x *Encoder) Request(ctx context.Context, line string, timeout time.Duration) (string, error) {
	return x.e.request(line, timeout, ctx.Done())
}

// NEmbd is what the encoder's READY said.
func (x *Encoder) NEmbd() int { return x.e.nEmbd }

// Alive reports whether the process still runs.
func (x *Encoder) Alive() bool { return x.e.alive() }

// Tail is the last line the encoder wrote to stderr.
func (x *Encoder) Tail() string { return x.e.tail.String() }

// PID is the encoder's process id.
func (x *Encoder) PID() int { return x.e.cmd.Process.Pid }

// Stop sends QUIT, waits up to grace, then kills it (grace 0: kill at once).
func (x *Encoder) Stop(grace time.Duration) { x.e.stop(grace) }
