// Package encoderproc runs one strata-vision process and speaks its line
// protocol (docs/strata.md): it starts the encoder and waits for READY,
// sends one request line and waits for its reply, and stops it with QUIT,
// then a kill. It also reads what the encoder says on stderr about where it
// runs (Where). The agent on the second PC and the relay's encoder on this
// PC's CPU both drive their strata-vision through it. The process dies with
// its parent (a parent-death signal on Linux, a Job Object on Windows).
package encoderproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/framing"
)

// Encoder is one running strata-vision process.
type Encoder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string   // its stdout, line by line; closed when it ends
	done  chan struct{} // closed when the process has exited and been reaped
	nEmbd int
	tail  *lastLine
	kill  func() // platform extra: e.g. closing a Windows job object
}

// ErrStopped is returned by Request when the encoder exited.
var ErrStopped = errors.New("the encoder stopped")

// lastLine passes stderr through (prefixed) and remembers its last line, so
// a failure can say what the encoder said.
type lastLine struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	last string
	// What the encoder said about where it runs: its start line, and a
	// CUDA runtime's failure to find a GPU. startSeen is closed at the
	// start line (stderr is copied on its own goroutine: READY on stdout may
	// be read before it).
	start, cuda string
	startSeen   chan struct{}
}

// The encoder's start lines (tools/vision/strata_vision.cpp), and what a
// CUDA build of ggml prints when it finds no GPU (it then runs on the CPU).
const (
	startGPU = "strata-vision: warmed up at "
	startCPU = "strata-vision: on the CPU, "
)

func isCUDAFailure(l string) bool {
	l = strings.ToLower(l)
	return strings.Contains(l, "failed to initialize cuda") || strings.Contains(l, "no cuda-capable device") ||
		strings.Contains(l, "cuda driver version is insufficient")
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(l.buf[:i]), "\r")
		l.buf = l.buf[i+1:]
		if strings.TrimSpace(line) != "" {
			l.last = line
		}
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, startGPU), strings.HasPrefix(t, startCPU):
			if l.start == "" && l.startSeen != nil {
				close(l.startSeen)
			}
			l.start = t
		case isCUDAFailure(t) && l.cuda == "":
			l.cuda = t
		}
		if l.w != nil {
			fmt.Fprintln(l.w, line)
		}
	}
	if len(l.buf) > 4096 { // a line without end: keep memory bounded
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Start is the encoder's start line ("" if it printed none).
func (l *lastLine) Start() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start
}

// CUDAFailure is the CUDA runtime's line saying it found no GPU ("" if none).
func (l *lastLine) CUDAFailure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cuda
}

// observe says where an encoder reads pictures from what it printed at its
// start: askedGPU says it was started with --gpu. The encoder prints the
// warm-up line on its --gpu path whatever runs it, so a CUDA failure line
// before it means the CPU; no start line at all (another encoder) leaves the
// device to what it was asked.
func observe(start, cudaFailure string, askedGPU bool) framing.Where {
	w := framing.Where{Device: "cpu"}
	if askedGPU {
		w.Expected = "gpu"
	}
	switch {
	case strings.HasPrefix(start, startGPU):
		fmt.Sscanf(strings.TrimPrefix(start, startGPU), "%d", &w.Tokens)
		if cudaFailure == "" {
			w.Device = "gpu"
		} else {
			w.Reason = cudaFailure
		}
	case strings.HasPrefix(start, startCPU):
		fmt.Sscanf(strings.TrimPrefix(start, startCPU), "%d", &w.Threads)
		if askedGPU {
			w.Reason = "the encoder started on the CPU although --gpu was passed"
		}
	default:
		if askedGPU && cudaFailure == "" {
			w.Device = "gpu" // it said nothing either way
		}
		w.Reason = cudaFailure
	}
	return w
}

// Start runs path with args and waits for READY within timeout; its stderr
// goes to stderr (line by line) and its last line is kept. env is its
// environment (nil: this process's). An argument the encoder refuses
// ("unknown argument X", exit 2: an encoder older than the server that
// passed X) is dropped, with its value, and the encoder started again
// without it; a note on stderr says so.
func Start(path string, args, env []string, stderr io.Writer, timeout time.Duration) (*Encoder, error) {
	for {
		e, err := startOnce(path, args, env, stderr, timeout)
		if err == nil {
			return e, nil
		}
		var ua *unknownArg
		if !errors.As(err, &ua) {
			return nil, err
		}
		rest, ok := dropArg(args, ua.arg)
		if !ok {
			return nil, err
		}
		if stderr != nil {
			fmt.Fprintf(stderr, "vision relay: %s does not take %s; it runs without it\n", path, ua.arg)
		}
		args = rest
	}
}

// unknownArg is an encoder's refusal of one argument.
type unknownArg struct{ arg, line string }

func (u *unknownArg) Error() string { return u.line }

// dropArg removes arg and, when the next one is not a flag, its value.
// ok is false when arg is not there or is one of the encoder's own.
func dropArg(args []string, arg string) ([]string, bool) {
	switch arg {
	case "--mmproj", "--model", "--gpu", "--threads", "--max-tokens":
		return nil, false
	}
	for i, a := range args {
		if a != arg {
			continue
		}
		n := 1
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			n = 2
		}
		return append(append([]string(nil), args[:i]...), args[i+n:]...), true
	}
	return nil, false
}

func startOnce(path string, args, env []string, stderr io.Writer, timeout time.Duration) (*Encoder, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	tail := &lastLine{w: stderr, startSeen: make(chan struct{})}
	cmd.Stderr = tail
	setProcAttr(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot run %s: %v; check the encoder path in the companion settings (run `strata-service remote prepare`)", path, err)
	}
	e := &Encoder{cmd: cmd, stdin: stdin, lines: make(chan string, 4), done: make(chan struct{}), tail: tail}
	e.kill = afterStart(cmd)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			e.lines <- strings.TrimRight(sc.Text(), "\r")
		}
		close(e.lines)
		cmd.Wait()
		if e.kill != nil {
			e.kill()
		}
		close(e.done)
	}()
	var first string
	select {
	case l, ok := <-e.lines:
		if !ok {
			<-e.done
			if t := e.tail.String(); strings.HasPrefix(t, "unknown argument ") {
				return nil, &unknownArg{arg: strings.TrimSpace(strings.TrimPrefix(t, "unknown argument ")), line: fmt.Sprintf("it exited (%v) before READY: %s", cmd.ProcessState, t)}
			}
			return nil, fmt.Errorf("it exited (%v) before READY: %s", cmd.ProcessState, e.tail.String())
		}
		first = l
	case <-time.After(timeout):
		e.Stop(0)
		return nil, fmt.Errorf("it printed nothing within %s", timeout)
	}
	f := strings.Fields(first)
	if len(f) < 1 || f[0] != "READY" {
		e.Stop(0)
		return nil, fmt.Errorf("its first line was %q, not READY", first)
	}
	if len(f) > 1 {
		e.nEmbd, _ = strconv.Atoi(f[1])
	}
	// The start line comes before READY; its copy may lag behind. An
	// encoder that prints none (not Strata's) costs this wait once.
	select {
	case <-tail.startSeen:
	case <-time.After(250 * time.Millisecond):
	}
	return e, nil
}

// ErrCancelled is returned by Request when cancel was closed first (the
// relay's session ended, or Strata sent QUIT): the encoder must then be
// stopped, as it may still be reading the picture.
var ErrCancelled = errors.New("the request was cancelled")

// Request sends one request line and waits for its reply line, the timeout,
// or cancel (nil: never).
func (e *Encoder) Request(line string, timeout time.Duration, cancel <-chan struct{}) (string, error) {
	if _, err := io.WriteString(e.stdin, line+"\n"); err != nil {
		return "", ErrStopped
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-e.lines:
		if !ok {
			return "", ErrStopped
		}
		return l, nil
	case <-t.C:
		return "", fmt.Errorf("the encoder gave no answer within %s", timeout)
	case <-cancel:
		return "", ErrCancelled
	}
}

// Where says where the encoder reads pictures, from its start line and any
// CUDA failure it printed; askedGPU says it was started with --gpu.
func (e *Encoder) Where(askedGPU bool) framing.Where {
	return observe(e.tail.Start(), e.tail.CUDAFailure(), askedGPU)
}

// Args are the arguments it runs with (after any it refused were dropped).
func (e *Encoder) Args() []string { return e.cmd.Args[1:] }

// NEmbd is what the encoder's READY said.
func (e *Encoder) NEmbd() int { return e.nEmbd }

// Tail is the last line the encoder wrote to stderr.
func (e *Encoder) Tail() string { return e.tail.String() }

// PID is the encoder's process id.
func (e *Encoder) PID() int { return e.cmd.Process.Pid }

// Alive reports whether the process still runs.
func (e *Encoder) Alive() bool {
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

// Stop sends QUIT, waits up to grace, then kills it (grace 0: kill at once).
func (e *Encoder) Stop(grace time.Duration) {
	if grace > 0 {
		io.WriteString(e.stdin, "QUIT\n")
	}
	e.stdin.Close()
	select {
	case <-e.done:
		return
	case <-time.After(grace):
	}
	e.cmd.Process.Kill()
	go func() {
		for range e.lines { // drain so the reader goroutine can finish
		}
	}()
	<-e.done
}
