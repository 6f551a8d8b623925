//go:build linux

package testenv

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// LendProbe is cmd/lend-probe (internal/lend's Announce, Browse and Watch,
// and a listener for mDNS goodbyes) running inside a LAN host: the one way
// tests and benches run code that sends multicast. Its -root-netns is this
// process's namespace (RootNetns), which the probe refuses to run in, as it
// refuses that of process 1 where it can read it.
type LendProbe struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	Stderr *Buffer
}

// StartLendProbe starts `lend-probe ARGS...` in h (see cmd/lend-probe for
// the modes and the lines each prints); it is killed when t ends.
func StartLendProbe(t testing.TB, h *LANHost, args ...string) *LendProbe {
	t.Helper()
	bin := Program(t, "github.com/strata-companion/companion/internal/testenv/cmd/lend-probe")
	if RootNetns == "" {
		t.Fatal("this process's network namespace is unknown (/proc/self/ns/net)")
	}
	p := &LendProbe{t: t, lines: make(chan string, 64), Stderr: &Buffer{}}
	p.cmd = h.Command(bin, append([]string{"-root-netns", RootNetns}, args...)...)
	p.cmd.Stderr = p.Stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(out)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

// Expect waits for the probe's next line that is prefix or starts with
// prefix and a space, skipping others, and returns what follows the space.
func (p *LendProbe) Expect(prefix string, within time.Duration) string {
	p.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("lend-probe ended before %q: %s", prefix, p.Stderr)
			}
			if l == prefix {
				return ""
			}
			if rest, ok := strings.CutPrefix(l, prefix+" "); ok {
				return rest
			}
		case <-deadline:
			p.t.Fatalf("waited %s for %q from lend-probe; its stderr: %s", within, prefix, p.Stderr)
		}
	}
}

// CloseInput closes the probe's stdin: an announcing probe withdraws, a
// watching one stops.
func (p *LendProbe) CloseInput() { p.stdin.Close() }
