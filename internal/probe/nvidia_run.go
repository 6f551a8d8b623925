package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

type nvidiaResult struct {
	path     string
	query    string
	gpus     []GPU
	problems []Finding
}

// probeNvidia finds nvidia-smi and asks it. The first candidate that starts
// is the one used: a second try after a hung or failing driver would only
// double the wait and say the same thing.
func probeNvidia(ctx context.Context, o Options) nvidiaResult {
	cands := nvidiaSMICandidates(o)
	if len(cands) == 0 {
		where := "looked on PATH"
		if len(o.SearchPaths) > 0 {
			where += " and in " + strings.Join(o.SearchPaths, ", ")
		}
		if o.NvidiaSMIPath != "" {
			where = "looked for " + o.NvidiaSMIPath
		}
		return nvidiaResult{problems: []Finding{(&SMIError{Kind: SMINotFound, Where: where}).Finding()}}
	}
	var res nvidiaResult
	for _, path := range cands {
		res = nvidiaResult{path: path}
		var kind SMIErrorKind
		res.gpus, res.query, res.problems, kind = queryNvidia(ctx, LocalRunner(path, o.Timeout), path)
		if kind != SMIStartFailed {
			break
		}
	}
	return res
}

// NvidiaSMICandidates lists the nvidia-smi binaries Probe would try, in
// order (o's zero fields take their defaults): the second PC's agent finds
// its nvidia-smi the same way.
func NvidiaSMICandidates(o Options) []string { return nvidiaSMICandidates(o.withDefaults()) }

// nvidiaSMICandidates lists the nvidia-smi binaries to try, in order: the
// override alone, else PATH, then the drivers' usual places.
func nvidiaSMICandidates(o Options) []string {
	if o.NvidiaSMIPath != "" {
		if isFile(o.NvidiaSMIPath) {
			return []string{o.NvidiaSMIPath}
		}
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] && isFile(p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	if p, err := o.LookPath("nvidia-smi"); err == nil {
		add(p)
	}
	for _, p := range o.SearchPaths {
		add(p)
	}
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// maxOutput caps what is kept of nvidia-smi's output: eight GPUs take about
// 1 KB; a binary spewing garbage must not eat memory.
const maxOutput = 1 << 20

// LocalRunner runs the nvidia-smi at path, killing it and everything it
// started when timeout passes (or ctx ends).
func LocalRunner(path string, timeout time.Duration) Runner {
	return func(parent context.Context, args []string) ([]byte, error) {
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, args...)
		var out capWriter
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Stdin = nil
		prepareTreeKill(cmd)
		// A grandchild that keeps our pipes open must not hold Wait after
		// the kill.
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: %v", ErrNvidiaSMINotFound, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrNvidiaSMIStart, err)
		}
		err := cmd.Wait()
		if ctx.Err() != nil {
			killTree(cmd) // make sure of grandchildren even if Wait returned first
			if parent.Err() != nil {
				return out.Bytes(), fmt.Errorf("the probe was cancelled: %w", parent.Err())
			}
			return out.Bytes(), timeoutError{timeout}
		}
		return out.Bytes(), err
	}
}

// capWriter keeps the first maxOutput bytes and drops the rest. Stdout and
// stderr share it, from two goroutines.
type capWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := maxOutput - w.buf.Len(); room > 0 {
		if len(p) > room {
			w.buf.Write(p[:room])
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

func (w *capWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// timeoutError reads "no answer after 10s" (for people) and is
// context.DeadlineExceeded (for code).
type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string {
	return "no answer after " + e.after.Round(time.Millisecond).String()
}
func (e timeoutError) Unwrap() error { return context.DeadlineExceeded }
