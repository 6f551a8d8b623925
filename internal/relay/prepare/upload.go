package prepare

// Uploading to the second PC, for prepare (prepare.go) and pairing
// (InstallAgent): the agent's own copy through the remote shell or sftp
// (bootstrapAgent, sftp.go), then the agent's framed file session (client):
// each file skipped when its sha256 matches, resumed from its .part,
// checked there, with a progress line per second.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/framing/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// chunk is one PutData frame's size.
const chunk = 1 << 20

// bootstrapAgent copies the agent through the remote shell (the one upload
// that cannot use the agent itself), to a .part file renamed when complete.
func bootstrapAgent(ctx context.Context, conn remote.Conn, goos, dir, bin string, p io.Writer) error {
	name := remote.AgentName(goos)
	var cmd string
	if c := remote.SSHClient(conn); c != nil && goos == "windows" {
		// Windows' OpenSSH serves sftp: a library, with a checksum and
		// resume, instead of a PowerShell script.
		_, err := UploadSFTP(ctx, c, bin, SFTPPath(goos, remote.RemoteJoin(goos, dir, name)), p)
		return err
	}
	if goos == "windows" {
		// -EncodedCommand takes the script as base64 UTF-16: no quoting
		// rules of cmd.exe or PowerShell to get wrong. The data itself
		// streams raw on stdin.
		script := fmt.Sprintf(`$ErrorActionPreference='Stop'; $d=%s; New-Item -ItemType Directory -Force -Path $d | Out-Null; `+
			`$t=Join-Path $d '%s.part'; $f=[IO.File]::Create($t); [Console]::OpenStandardInput().CopyTo($f); $f.Close(); `+
			`Move-Item -Force $t (Join-Path $d '%s')`, remotecmd.PowerShellLiteral(dir), name, name)
		cmd = remotecmd.EncodedPowerShell(script)
	} else {
		q := remotecmd.POSIX
		part, final := remote.RemoteJoin(goos, dir, "."+name+".part"), remote.RemoteJoin(goos, dir, name)
		cmd = fmt.Sprintf("mkdir -p %s && cat > %s && chmod 755 %s && mv -f %s %s", q(dir), q(part), q(part), q(part), q(final))
	}
	proc, err := conn.Start(cmd)
	if err != nil {
		return err
	}
	defer proc.Close()
	var stderr strings.Builder
	errDone := make(chan struct{})
	go func() { io.Copy(&stderr, io.LimitReader(proc.Stderr, 4096)); close(errDone) }()
	go io.Copy(io.Discard, proc.Stdout)
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	pr := &progress{w: p, name: remote.AgentName(goos), total: st.Size()}
	if _, err := io.Copy(proc.Stdin, io.TeeReader(f, pr)); err != nil {
		// The remote side ended early: its stderr says why.
		select {
		case <-errDone:
		case <-time.After(bounds.PrepareStderr):
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("copying the agent to the second PC failed: %s", msg)
		}
		return fmt.Errorf("copying the agent to the second PC: %v", err)
	}
	pr.done()
	proc.Stdin.Close()
	select {
	case <-errDone:
	case <-time.After(bounds.PrepareShellCopy):
	}
	// Success is judged by the agent's own checksum afterwards; stderr
	// explains a failure.
	if s := strings.TrimSpace(stderr.String()); s != "" {
		return fmt.Errorf("copying the agent to the second PC failed: %s", s)
	}
	return nil
}

// progress prints a line per second (and at the end) of an upload.
type progress struct {
	w           io.Writer
	name        string
	total, sent int64
	start, last time.Time
}

func (p *progress) Write(b []byte) (int, error) {
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	p.sent += int64(len(b))
	if now.Sub(p.last) >= bounds.PrepareProgress {
		p.last = now
		p.print()
	}
	return len(b), nil
}

func (p *progress) print() {
	secs := time.Since(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.sent) / secs / (1 << 20)
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.sent) / float64(p.total)
	}
	fmt.Fprintf(p.w, "  %s: %3.0f%% (%.1f of %.1f MiB, %.1f MiB/s)\n", p.name, pct, float64(p.sent)/(1<<20), float64(p.total)/(1<<20), rate)
}

func (p *progress) done() {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.print()
}

// client is a sequential framed session with an agent (prepare's side).
type client struct {
	proc remote.Proc
	fw   *framing.Writer
	fr   *framing.Reader
	info framing.Info
	p    io.Writer
	tail *tailWriter
	// stderrDone is closed when the agent's stderr is copied to its end:
	// close waits for it, so nothing writes to p after Prepare returned.
	stderrDone chan struct{}
}

type tailWriter struct {
	mu   sync.Mutex
	last string
}

func (t *tailWriter) Write(b []byte) (int, error) {
	if s := strings.TrimSpace(string(b)); s != "" {
		lines := strings.Split(s, "\n")
		t.mu.Lock()
		t.last = lines[len(lines)-1]
		t.mu.Unlock()
	}
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// lockedWriter lets the agent's stderr and the progress lines share one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// errMsg reads an Error frame's message.
func errMsg(b []byte) string {
	if _, m, err := framing.SplitID(b); err == nil {
		return string(m)
	}
	return "the agent reported an unreadable error"
}

func startClient(ctx context.Context, conn remote.Conn, cmd string, p io.Writer) (*client, error) {
	proc, err := conn.Start(cmd)
	if err != nil {
		return nil, err
	}
	c := &client{proc: proc, fw: framing.NewWriter(proc.Stdin), fr: framing.NewReader(proc.Stdout), p: p, tail: &tailWriter{},
		stderrDone: make(chan struct{})}
	go func() {
		defer close(c.stderrDone)
		io.Copy(io.MultiWriter(c.tail, prefixed(p, "  second PC: ")), proc.Stderr)
	}()
	t, b, err := c.next(ctx, bounds.PrepareHello, framing.Hello)
	if err != nil || t != framing.Hello || json.Unmarshal(b, &c.info) != nil {
		c.close()
		if err == nil {
			err = errors.New("it did not greet as an agent")
		}
		return nil, fmt.Errorf("the agent did not start (%v %s)", err, c.tail.String())
	}
	return c, nil
}

// next reads frames until one of want (or an Error) arrives.
func (c *client) next(ctx context.Context, within time.Duration, want ...framing.Type) (framing.Type, []byte, error) {
	type res struct {
		t   framing.Type
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			t, b, err := c.fr.Next()
			if err != nil {
				ch <- res{err: err}
				return
			}
			if t == framing.Error {
				ch <- res{t: t, b: b}
				return
			}
			for _, w := range want {
				if t == w {
					ch <- res{t: t, b: b}
					return
				}
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return 0, nil, fmt.Errorf("the agent's session ended: %v", r.err)
		}
		return r.t, r.b, nil
	case <-time.After(within):
		c.close()
		return 0, nil, fmt.Errorf("the second PC gave no answer within %s", within)
	case <-ctx.Done():
		c.close()
		return 0, nil, ctx.Err()
	}
}

func (c *client) close() {
	c.proc.Stdin.Close()
	c.proc.Close()
	select { // the session's end ends its stderr; bounded all the same
	case <-c.stderrDone:
	case <-time.After(bounds.PrepareClose):
	}
}

func (c *client) stat(name string) (framing.FileInfo, error) {
	var fi framing.FileInfo
	if err := c.fw.WriteJSON(framing.Stat, map[string]string{"name": name}); err != nil {
		return fi, err
	}
	t, b, err := c.next(context.Background(), bounds.PrepareStat, framing.StatReply)
	if err != nil {
		return fi, err
	}
	if t == framing.Error {
		return fi, errors.New(errMsg(b))
	}
	return fi, json.Unmarshal(b, &fi)
}

// upload sends local as name, skipping it when the second PC has the same
// bytes and resuming a partial upload; a damaged result is sent again once.
func (c *client) upload(ctx context.Context, local, name string, mode uint32) error {
	sum, err := sha256File(local)
	if err != nil {
		return err
	}
	st, err := os.Stat(local)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		fi, err := c.stat(name)
		if err != nil {
			return err
		}
		if fi.Exists && fi.SHA256 == sum {
			fmt.Fprintf(c.p, "%s is already on the second PC (sha256 %s)\n", name, sum[:12])
			return nil
		}
		off := int64(0)
		if fi.PartialSize > 0 && fi.PartialSize <= st.Size() {
			off = fi.PartialSize
			fmt.Fprintf(c.p, "resuming %s at %.1f MiB\n", name, float64(off)/(1<<20))
		} else {
			fmt.Fprintf(c.p, "uploading %s (%.1f MiB)\n", name, float64(st.Size())/(1<<20))
		}
		err = c.send(ctx, local, framing.PutHeader{Name: name, Size: st.Size(), SHA256: sum, Offset: off, Mode: mode})
		if err == nil {
			return nil
		}
		if attempt > 0 || !strings.Contains(err.Error(), "damaged") {
			return err
		}
		fmt.Fprintf(c.p, "%v; sending it again from the start\n", err)
	}
}

func (c *client) send(ctx context.Context, local string, h framing.PutHeader) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(h.Offset, io.SeekStart); err != nil {
		return err
	}
	if err := c.fw.WriteJSON(framing.PutBegin, h); err != nil {
		return err
	}
	pr := &progress{w: c.p, name: h.Name, total: h.Size, sent: h.Offset}
	buf := make([]byte, chunk)
	for {
		if ctx.Err() != nil {
			return ctx.Err() // the .part stays for a resume
		}
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			if err := c.fw.Write(framing.PutData, buf[:n]); err != nil {
				return fmt.Errorf("the connection broke while uploading %s (run prepare again to resume): %v", h.Name, err)
			}
			pr.Write(buf[:n])
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	pr.done()
	if err := c.fw.Write(framing.PutEnd); err != nil {
		return err
	}
	t, b, err := c.next(ctx, bounds.PreparePut, framing.PutReply)
	if err != nil {
		return err
	}
	if t == framing.Error {
		return errors.New(errMsg(b))
	}
	return nil
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func prefixed(w io.Writer, prefix string) io.Writer { return &prefixWriter{w, prefix} }

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			fmt.Fprintln(p.w, p.prefix+l)
		}
	}
	return len(b), nil
}

// InstallAgent copies the agent build bin into dir on the second PC over c
// (a login with the user's own credentials: pairing an agent-only key, which
// cannot do this itself), checks that the copy there is that build (its own
// sha256), and returns the agent's absolute folder. c stays open.
func InstallAgent(ctx context.Context, c *ssh.Client, goos, dir, bin string) (string, error) {
	if err := remotecmd.CheckPath("remote_dir", dir); err != nil {
		return "", err
	}
	conn := remote.BorrowSSHConn(c) // not watched: the caller owns c
	if err := bootstrapAgent(ctx, conn, goos, dir, bin, io.Discard); err != nil {
		return "", err
	}
	sum, err := sha256File(bin)
	if err != nil {
		return "", err
	}
	cmd, err := agentcmd.Command{Program: remote.RemoteJoin(goos, dir, remote.AgentName(goos)), Verb: agentcmd.VerbAgent}.Quote(goos)
	if err != nil {
		return "", err
	}
	cl, err := startClient(ctx, conn, cmd, io.Discard)
	if err != nil {
		return "", fmt.Errorf("the agent was copied to the second PC but does not start: %v", err)
	}
	defer cl.close()
	if fi, err := cl.stat(SelfName); err != nil || fi.SHA256 != sum {
		return "", errors.New("the agent on the second PC is not the one just copied (is another copy running and locked? stop Strata and try again)")
	}
	return cl.info.Dir, nil
}
