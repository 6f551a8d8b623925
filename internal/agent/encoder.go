package agent

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
)

// encoder is one running strata-vision process.
type encoder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string   // its stdout, line by line; closed when it ends
	done  chan struct{} // closed when the process has exited and been reaped
	nEmbd int
	tail  *lastLine
	kill  func() // platform extra: e.g. closing a Windows job object
}

var errEncoderStopped = errors.New("the encoder stopped")

// lastLine passes stderr through (prefixed) and remembers its last line, so
// a failure can say what the encoder said.
type lastLine struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	last string
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

// startEncoder starts the encoder and waits for READY within timeout.
func startEncoder(path string, args []string, stderr io.Writer, timeout time.Duration) (*encoder, error) {
	cmd := exec.Command(path, args...)
	tail := &lastLine{w: stderr}
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
	e := &encoder{cmd: cmd, stdin: stdin, lines: make(chan string, 4), done: make(chan struct{}), tail: tail}
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
			return nil, fmt.Errorf("it exited (%v) before READY: %s", cmd.ProcessState, e.tail.String())
		}
		first = l
	case <-time.After(timeout):
		e.stop(0)
		return nil, fmt.Errorf("it printed nothing within %s", timeout)
	}
	f := strings.Fields(first)
	if len(f) < 1 || f[0] != "READY" {
		e.stop(0)
		return nil, fmt.Errorf("its first line was %q, not READY", first)
	}
	if len(f) > 1 {
		e.nEmbd, _ = strconv.Atoi(f[1])
	}
	return e, nil
}

// errCancelled means the request was given up on its caller's word (the
// relay's session ended, or Strata sent QUIT): the encoder must be stopped,
// as it may still be reading the picture.
var errCancelled = errors.New("the request was cancelled")

// request sends one line and waits for the reply line, the timeout, or
// cancel (nil: never).
func (e *encoder) request(line string, timeout time.Duration, cancel <-chan struct{}) (string, error) {
	if _, err := io.WriteString(e.stdin, line+"\n"); err != nil {
		return "", errEncoderStopped
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-e.lines:
		if !ok {
			return "", errEncoderStopped
		}
		return l, nil
	case <-t.C:
		return "", fmt.Errorf("the encoder gave no answer within %s", timeout)
	case <-cancel:
		return "", errCancelled
	}
}

// alive reports whether the process still runs.
func (e *encoder) alive() bool {
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

// stop asks the encoder to QUIT, waits up to grace, then kills it.
func (e *encoder) stop(grace time.Duration) {
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
