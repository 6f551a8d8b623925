// Package linkprobe measures a second PC over one ssh connection: its OS and
// CPU architecture, its GPUs (the same nvidia-smi query and parser as the
// local probe), whether the encoder and the model files are in place, the
// round-trip time and the throughput both ways over that very connection,
// and from these what one picture would cost there. The wizard and the CLI
// (strata-service probe --ssh) share its Result.
//
// It asks the second PC one of two ways (Result.Via). Where the key may run
// commands, as plain ssh commands in the remote user's login shell: a POSIX
// sh (Linux, macOS, Git Bash) or Windows' cmd.exe / PowerShell. Where the
// companion's key runs only the agent (paired agent-only: its gate refuses
// every shell command with exit status 126), or Options.UseAgent says so,
// through the agent's own subcommands: `probe` (one JSON line: OS,
// architecture, nvidia-smi's raw output, which files are there), `sink` and
// `source N` (the throughput), each command line quoted for the OS the
// record or the agent names (internal/remotecmd). The round trip is timed
// by ssh keepalives either way, and nvidia-smi's output is read by the local
// probe's parser either way. No file is written on the second PC (except
// sftp's temporary one on Windows through a shell, removed at once).
package linkprobe

import (
	"github.com/strata-companion/companion/internal/capbuf"
	"github.com/strata-companion/companion/internal/nvsmi"

	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// Options tunes a probe; the zero value is sensible.
type Options struct {
	// RemoteDir is the folder on the second PC that should hold the agent,
	// strata-vision and the model files (settings.Remote.RemoteDir); ""
	// skips the file checks.
	RemoteDir string
	// EncoderPath is strata-vision there, absolute or relative to RemoteDir
	// (settings.Remote.EncoderPath); "" means strata-vision(.exe) in RemoteDir.
	EncoderPath string
	// ModelFiles are the file names expected in RemoteDir (the mmproj and
	// the vocabulary stub); nil lists the *.gguf files found there instead.
	ModelFiles []string
	// Pings is how many keepalive round trips give the RTT median (default 7).
	Pings int
	// TransferBytes is sent each way to measure throughput (default 4 MiB).
	TransferBytes int64
	// StepTimeout bounds each remote command (default 20 s).
	StepTimeout time.Duration
	// NoLink skips the round trip and throughput (a quick check of the PC
	// alone); the estimate then assumes a 1 Gbit/s, 1 ms link and says so.
	NoLink bool
	// Agent is the agent's path on the second PC (the paired record's
	// folder joined with the agent's name, remotecmd.Join): the probe asks
	// it when the login shell refuses (an agent-only key), or at once with
	// UseAgent. "" : through the shell only.
	Agent string
	// AgentOS is the OS the record says the second PC runs, which the
	// agent's command lines are quoted for ("": guessed from Agent's path).
	AgentOS string
	// UseAgent asks the agent without trying the shell first.
	UseAgent bool
}

// File is one file checked on the second PC.
type File struct {
	Path    string `json:"path"`
	Present bool   `json:"present"`
}

// Result is what the probe found. Figures that could not be measured are
// zero, with a Finding that says why.
type Result struct {
	Host string `json:"host"`
	// Via is how the second PC was asked: ViaShell or ViaAgent.
	Via string `json:"via"`
	// OS and Arch in Go's words ("linux", "windows", "darwin"; "amd64",
	// "arm64"); "" when unknown. Shell is "posix" or "windows".
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	Shell string `json:"shell"`
	// Uname is the raw OS line (uname -sm, or Windows' ver).
	Uname string `json:"uname"`

	GPUs        []probe.GPU `json:"gpus"`
	NvidiaQuery string      `json:"nvidia_query"`

	RemoteDir      string `json:"remote_dir,omitempty"`
	Encoder        *File  `json:"encoder,omitempty"`
	ModelFiles     []File `json:"model_files,omitempty"`
	FilesInPlace   bool   `json:"files_in_place"`
	EncoderPresent bool   `json:"encoder_present"`

	// RTT is the median of RTTSamples (keepalive@openssh.com requests).
	RTT        time.Duration   `json:"rtt_ns"`
	RTTSamples []time.Duration `json:"rtt_samples_ns"`
	// UpBytesPerSec: this PC to the second PC; DownBytesPerSec: back.
	UpBytesPerSec   float64 `json:"up_bytes_per_sec"`
	DownBytesPerSec float64 `json:"down_bytes_per_sec"`
	TransferBytes   int64   `json:"transfer_bytes"`

	// Estimate is one 1024-token picture read there, as a client sees it.
	Estimate probe.Estimate  `json:"estimate"`
	Findings []probe.Finding `json:"findings"`
	Duration time.Duration   `json:"duration_ns"`
}

// Facts is the result in the form probe.Recommend and EstimateRemote take.
func (r *Result) Facts() *probe.RemoteFacts {
	return &probe.RemoteFacts{
		Host:            r.Host,
		Reachable:       true,
		GPUs:            r.GPUs,
		RTT:             r.RTT,
		UpBytesPerSec:   r.UpBytesPerSec,
		DownBytesPerSec: r.DownBytesPerSec,
		EncoderPresent:  r.EncoderPresent,
	}
}

// Run probes the second PC over c (already dialed and authenticated). host
// names it in messages. It always returns a Result; what failed is in
// Findings. ctx ends it early.
func Run(ctx context.Context, c *ssh.Client, host string, opts Options) *Result {
	start := time.Now()
	if opts.Pings <= 0 {
		opts.Pings = 7
	}
	if opts.TransferBytes <= 0 {
		opts.TransferBytes = 4 << 20
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 20 * time.Second
	}
	r := &Result{Host: host, GPUs: []probe.GPU{}, Findings: []probe.Finding{}, RemoteDir: opts.RemoteDir, TransferBytes: opts.TransferBytes}
	p := &prober{c: c, opts: opts, r: r}

	if !opts.UseAgent {
		p.system(ctx)
	}
	if opts.UseAgent || p.gated {
		p.runViaAgent(ctx)
	} else {
		r.Via = ViaShell
		p.gpus(ctx)
		p.files(ctx)
		if !opts.NoLink {
			p.rtt(ctx)
			p.throughput(ctx)
		}
	}

	r.Estimate = probe.EstimateRemote(r.Facts())
	r.Duration = time.Since(start)
	return r
}

type prober struct {
	c    *ssh.Client
	opts Options
	r    *Result
	// gated: the login shell refused uname with the agent-only gate's
	// sentence, so the agent is asked instead.
	gated bool
}

func (p *prober) find(sev, what, fix string) {
	p.r.Findings = append(p.r.Findings, probe.Finding{Severity: sev, What: what, Fix: fix})
}

func (p *prober) windows() bool { return p.r.Shell == "windows" }

// exec runs cmd in a fresh session and returns stdout and stderr together,
// the exit status (-1 when there was none) and an error for a failed session.
func (p *prober) exec(ctx context.Context, cmd string) (out []byte, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StepTimeout)
	defer cancel()
	sess, err := p.c.NewSession()
	if err != nil {
		return nil, -1, fmt.Errorf("opening an ssh session: %w", err)
	}
	defer sess.Close()
	// x/crypto copies stdout and stderr in two goroutines: one buffer for
	// both needs a lock.
	buf := capbuf.Buffer{Max: maxOutput}
	sess.Stdout, sess.Stderr = &buf, &buf
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	err = sess.Run(cmd)
	if ctx.Err() != nil {
		return buf.Bytes(), -1, fmt.Errorf("%q: %w", cmd, ctx.Err())
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		return buf.Bytes(), ee.ExitStatus(), nil
	}
	if err != nil {
		return buf.Bytes(), -1, err
	}
	return buf.Bytes(), 0, nil
}

// maxOutput bounds what one probe command's output may take in memory:
// every answer the probe reads is a few KiB (nvidia-smi's for many GPUs,
// the agent's JSON line), and a second PC that streams more within the
// step's deadline only gets the rest dropped.
const maxOutput = 1 << 20

// system finds the OS, the architecture and the kind of shell.
func (p *prober) system(ctx context.Context) {
	out, status, err := p.exec(ctx, "uname -sm")
	if err == nil && gateRefused(out, status) {
		p.gated = true
		return
	}
	line := firstLine(out)
	if err == nil && status == 0 {
		if goos, arch, ok := parseUname(line); ok {
			p.r.OS, p.r.Arch, p.r.Uname = goos, arch, line
			// Git Bash / MSYS on Windows: a POSIX shell on a Windows PC.
			p.r.Shell = "posix"
			return
		}
	}
	// No uname: Windows with cmd.exe (or PowerShell) as the ssh shell. Both
	// run cmd.exe; %PROCESSOR_ARCHITECTURE% is expanded by that cmd.exe.
	ver, vstatus, verr := p.exec(ctx, "cmd.exe /c ver")
	if verr == nil && vstatus == 0 && strings.Contains(string(ver), "Windows") {
		p.r.OS, p.r.Shell, p.r.Uname = "windows", "windows", strings.TrimSpace(firstNonEmptyLine(ver))
		arch, _, _ := p.exec(ctx, "cmd.exe /c echo %PROCESSOR_ARCHITEW6432% %PROCESSOR_ARCHITECTURE%")
		p.r.Arch = windowsArch(string(arch))
		return
	}
	if err != nil {
		p.find(probe.SeverityError, "could not run a command on the second PC: "+err.Error(),
			"check that the account may run commands over ssh (no forced command, a working login shell)")
		return
	}
	p.find(probe.SeverityWarning, fmt.Sprintf("the second PC's OS is not recognised (uname -sm said %q, exit status %d; cmd.exe /c ver said %q)", clip(string(out), 120), status, clip(string(ver), 120)),
		"Strata's encoder runs on Windows and Linux; check that the login shell is a normal one")
	p.r.Shell = "posix"
}

func parseUname(line string) (goos, arch string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", "", false
	}
	sys := strings.ToLower(f[0])
	switch {
	case sys == "linux":
		goos = "linux"
	case sys == "darwin":
		goos = "darwin"
	case strings.HasPrefix(sys, "mingw"), strings.HasPrefix(sys, "msys"), strings.HasPrefix(sys, "cygwin"):
		goos = "windows"
	case strings.HasSuffix(sys, "bsd"):
		goos = sys
	default:
		return "", "", false
	}
	return goos, normArch(f[len(f)-1]), true
}

func normArch(m string) string {
	switch strings.ToLower(strings.TrimSpace(m)) {
	case "x86_64", "amd64", "x64":
		return "amd64"
	case "aarch64", "arm64", "armv8", "armv8l":
		return "arm64"
	case "i386", "i686", "x86":
		return "386"
	}
	return strings.ToLower(m)
}

// windowsArch reads "%PROCESSOR_ARCHITEW6432% %PROCESSOR_ARCHITECTURE%" as
// echoed by cmd.exe: the first is set (the real one) only in a 32-bit
// process on 64-bit Windows; an unset one stays literally "%...%".
func windowsArch(echo string) string {
	for _, f := range strings.Fields(echo) {
		if strings.HasPrefix(f, "%") {
			continue
		}
		return normArch(f)
	}
	return ""
}

// gpus runs nvidia-smi there through the local probe's query and parser.
func (p *prober) gpus(ctx context.Context) {
	where := "on " + p.r.Host
	gpus, query, problems := probe.QueryNvidia(ctx, p.nvidiaRunner(), where)
	p.r.GPUs = append(p.r.GPUs, gpus...)
	p.r.NvidiaQuery = query
	p.r.Findings = append(p.r.Findings, problems...)
}

// nvidiaRunner runs nvidia-smi on the second PC. Under WSL it is not on a
// non-interactive shell's PATH; the driver's folder is tried after PATH.
func (p *prober) nvidiaRunner() probe.Runner {
	return func(ctx context.Context, args []string) ([]byte, error) {
		progs := []string{"nvidia-smi"}
		if !p.windows() {
			progs = append(progs, "/usr/lib/wsl/lib/nvidia-smi")
		}
		var out []byte
		for _, prog := range progs {
			o, status, err := p.exec(ctx, prog+" "+strings.Join(args, " "))
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return o, fmt.Errorf("nvidia-smi on the second PC: %w", context.DeadlineExceeded)
				}
				return o, err
			}
			if !commandNotFound(o, status) {
				if status != 0 {
					return o, fmt.Errorf("nvidia-smi exited with status %d", status)
				}
				return o, nil
			}
			out = o
		}
		return out, fmt.Errorf("no nvidia-smi on the second PC: %w", nvsmi.ErrNotFound)
	}
}

// commandNotFound recognises sh's 127 and cmd.exe's "is not recognized"
// (cmd exits 1 then; PowerShell says "is not recognized as the name").
func commandNotFound(out []byte, status int) bool {
	if status == 127 {
		return true
	}
	s := strings.ToLower(string(out))
	return status != 0 && (strings.Contains(s, "is not recognized") || strings.Contains(s, "command not found") ||
		strings.Contains(s, "no such file or directory"))
}

// files checks the encoder and the model files in RemoteDir.
func (p *prober) files(ctx context.Context) {
	dir := p.opts.RemoteDir
	if dir == "" {
		return
	}
	win := p.windows()
	enc := p.opts.EncoderPath
	if enc == "" {
		enc = "strata-vision"
		if p.r.OS == "windows" {
			enc += ".exe"
		}
	}
	encPath := join(win, dir, enc)
	paths := []string{encPath}
	for _, f := range p.opts.ModelFiles {
		paths = append(paths, join(win, dir, f))
	}
	present, err := p.exist(ctx, paths)
	if err != nil {
		p.find(probe.SeverityWarning, "could not check the files in "+dir+" on the second PC: "+err.Error(), "")
		return
	}
	p.r.Encoder = &File{Path: encPath, Present: present[0]}
	p.r.EncoderPresent = present[0]
	for i, f := range paths[1:] {
		p.r.ModelFiles = append(p.r.ModelFiles, File{Path: f, Present: present[i+1]})
	}
	if p.opts.ModelFiles == nil {
		names, err := p.listGGUF(ctx, dir)
		if err != nil {
			p.find(probe.SeverityWarning, "could not list the model files in "+dir+" on the second PC: "+err.Error(), "")
		}
		for _, n := range names {
			p.r.ModelFiles = append(p.r.ModelFiles, File{Path: join(win, dir, n), Present: true})
		}
	}
	p.filesVerdict(dir)
}

// filesVerdict says whether the encoder and the model files are in place.
func (p *prober) filesVerdict(dir string) {
	all := p.r.EncoderPresent
	for _, f := range p.r.ModelFiles {
		all = all && f.Present
	}
	// The encoder needs the mmproj and the vocabulary stub: two files.
	p.r.FilesInPlace = all && len(p.r.ModelFiles) >= 2
	if !p.r.FilesInPlace {
		p.find(probe.SeverityInfo, "the encoder and its model files are not all in "+dir+" on the second PC yet",
			"strata-service remote prepare copies them there")
	}
}

// exist reports, for each path, whether it exists on the second PC.
func (p *prober) exist(ctx context.Context, paths []string) ([]bool, error) {
	out := make([]bool, len(paths))
	if p.windows() {
		// cmd.exe's own `if exist`: no PowerShell needed; a path cmd.exe
		// cannot carry safely is refused (remotecmd.CmdArg).
		var cmd strings.Builder
		for i, f := range paths {
			q, err := remotecmd.CmdArg(f)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				cmd.WriteString(" & ")
			}
			cmd.WriteString(`(if exist ` + q + ` (echo yes) else (echo no))`)
		}
		o, _, err := p.exec(ctx, cmd.String())
		if err != nil {
			return nil, err
		}
		lines := strings.Fields(string(o))
		if len(lines) != len(paths) {
			return nil, fmt.Errorf("unexpected answer %q", clip(string(o), 120))
		}
		for i, l := range lines {
			out[i] = l == "yes"
		}
		return out, nil
	}
	var cmd strings.Builder
	cmd.WriteString("for f in")
	for _, f := range paths {
		cmd.WriteString(" " + remotecmd.POSIX(f))
	}
	cmd.WriteString(`; do if [ -e "$f" ]; then echo yes; else echo no; fi; done`)
	o, status, err := p.exec(ctx, cmd.String())
	if err != nil {
		return nil, err
	}
	lines := strings.Fields(string(o))
	if status != 0 || len(lines) != len(paths) {
		return nil, fmt.Errorf("unexpected answer %q", clip(string(o), 120))
	}
	for i, l := range lines {
		out[i] = l == "yes"
	}
	return out, nil
}

// listGGUF names the *.gguf files in dir there (none when dir is missing).
func (p *prober) listGGUF(ctx context.Context, dir string) ([]string, error) {
	var cmd string
	if p.windows() {
		q, err := remotecmd.CmdArg(strings.TrimRight(dir, `\/`) + `\*.gguf`)
		if err != nil {
			return nil, err
		}
		cmd = `dir /b /a-d ` + q + ` 2>nul`
	} else {
		cmd = "cd " + remotecmd.POSIX(dir) + " 2>/dev/null && for f in *.gguf; do [ -e \"$f\" ] && echo \"$f\"; done; true"
	}
	o, _, err := p.exec(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(o), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(strings.ToLower(l), ".gguf") && !strings.ContainsAny(l, `\/`) {
			names = append(names, l)
		}
	}
	sort.Strings(names)
	return names, nil
}

// rtt times keepalive@openssh.com global requests: the server answers
// each (with a failure: it does not know the name) without starting
// anything, so this is the connection's own round trip.
func (p *prober) rtt(ctx context.Context) {
	// One unmeasured request first: the first one may meet a cold path.
	if _, _, err := p.c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		p.find(probe.SeverityWarning, "could not time a round trip to the second PC: "+err.Error(), "")
		return
	}
	for i := 0; i < p.opts.Pings && ctx.Err() == nil; i++ {
		t0 := time.Now()
		if _, _, err := p.c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
			break
		}
		p.r.RTTSamples = append(p.r.RTTSamples, time.Since(t0))
	}
	p.r.RTT = median(p.r.RTTSamples)
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// throughput sends TransferBytes up into a sink there and reads as many
// back from a source there, through session stdin/stdout: the path the
// relay's pictures and results take, with no disk on either side.
func (p *prober) throughput(ctx context.Context) {
	if p.windows() {
		p.throughputSFTP(ctx)
		return
	}
	up, err := p.measureUp(ctx, p.sinkCommand(p.opts.TransferBytes))
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the upload speed to the second PC: "+err.Error(), "")
	}
	p.r.UpBytesPerSec = up
	down, err := p.measureDown(ctx, p.sourceCommand(p.opts.TransferBytes))
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the download speed from the second PC: "+err.Error(), "")
	}
	p.r.DownBytesPerSec = down
}

// Both remote ends first print "R" when ready. The sink prints it from the
// very process that then reads (awk's BEGIN), so its start (seconds on a
// busy PC) is never counted as
// transfer time; and it prints "D" once it has read everything, so the
// session's teardown is not counted either. The data is lines of "x" (awk
// reads records; a megabyte-long line of zeros would strain some awks).
// Windows measures through sftp instead (throughputSFTP).
func (p *prober) sinkCommand(n int64) string {
	return `awk 'BEGIN { printf "R"; fflush() } END { printf "D" }'`
}

func (p *prober) sourceCommand(n int64) string {
	return fmt.Sprintf("echo R; head -c %d /dev/zero", n)
}

// step is one measuring command running there (a sink or a source), in a
// session the step's deadline (StepTimeout) closes, which ends any read or
// write on it.
type step struct {
	sess   *ssh.Session
	ctx    context.Context
	stdin  io.WriteCloser // nil unless asked for
	stdout io.Reader
	stderr capbuf.Buffer
	end    func() // closes the session and releases the deadline
}

// startStep starts cmd, the step's what ("sink", "source"), and waits for
// its ready marker.
func (p *prober) startStep(ctx context.Context, cmd, what string, withStdin bool) (*step, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StepTimeout)
	sess, err := p.c.NewSession()
	if err != nil {
		cancel()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	st := &step{sess: sess, ctx: ctx, stderr: capbuf.Buffer{Max: maxOutput}, end: func() { stop(); sess.Close(); cancel() }}
	fail := func(err error) (*step, error) { st.end(); return nil, err }
	if withStdin {
		if st.stdin, err = sess.StdinPipe(); err != nil {
			return fail(err)
		}
	}
	if st.stdout, err = sess.StdoutPipe(); err != nil {
		return fail(err)
	}
	sess.Stderr = &st.stderr
	if err := sess.Start(cmd); err != nil {
		return fail(err)
	}
	if err := waitReady(st.stdout); err != nil {
		return fail(fmt.Errorf("the %s did not start: %v %s", what, err, clip(string(st.stderr.Bytes()), 200)))
	}
	return st, nil
}

// measureUp times cmd, a sink there (the shell's or the agent's).
func (p *prober) measureUp(ctx context.Context, cmd string) (float64, error) {
	st, err := p.startStep(ctx, cmd, "sink", true)
	if err != nil {
		return 0, err
	}
	defer st.end()
	ctx, sess, stdin, stdout, stderr := st.ctx, st.sess, st.stdin, st.stdout, &st.stderr
	done := make(chan error, 1)
	go func() {
		// Wait for "D": everything sent has been read there.
		b := make([]byte, 1)
		for {
			if _, err := io.ReadFull(stdout, b); err != nil {
				done <- err
				return
			}
			if b[0] == 'D' {
				if p.r.Via != ViaAgent {
					done <- nil
					return
				}
				// The agent's sink says how much it read.
				n, err := sinkCount(stdout)
				if err == nil && n != p.opts.TransferBytes {
					err = fmt.Errorf("the sink read %d of the %d bytes sent", n, p.opts.TransferBytes)
				}
				done <- err
				return
			}
		}
	}()
	buf := make([]byte, 32*1024)
	for i := range buf {
		buf[i] = 'x'
		if i%1024 == 1023 {
			buf[i] = '\n'
		}
	}
	t0 := time.Now()
	for sent := int64(0); sent < p.opts.TransferBytes; {
		n := int64(len(buf))
		if rest := p.opts.TransferBytes - sent; rest < n {
			n = rest
		}
		if _, err := stdin.Write(buf[:n]); err != nil {
			return 0, ctxOr(ctx, err)
		}
		sent += n
	}
	stdin.Close() // the end of the data: the sink answers "D" once it read it all
	if err := <-done; err != nil {
		return 0, ctxOr(ctx, fmt.Errorf("the sink stopped before reading everything: %v %s", err, clip(string(stderr.Bytes()), 200)))
	}
	elapsed := time.Since(t0)
	sess.Wait()
	// From the first byte leaving to the "D" coming back is the transfer
	// plus one round trip.
	return rate(p.opts.TransferBytes, elapsed, p.r.RTT), nil
}

// measureDown times cmd, a source there (the shell's or the agent's).
func (p *prober) measureDown(ctx context.Context, cmd string) (float64, error) {
	st, err := p.startStep(ctx, cmd, "source", false)
	if err != nil {
		return 0, err
	}
	defer st.end()
	ctx, sess, stdout, stderr := st.ctx, st.sess, st.stdout, &st.stderr
	// The clock starts at the first byte after the marker; that first read
	// is not counted, as its bytes were already on the way.
	buf := make([]byte, 64*1024)
	first, err := stdout.Read(buf)
	if err != nil {
		return 0, ctxOr(ctx, err)
	}
	t0 := time.Now()
	n, err := io.CopyBuffer(io.Discard, stdout, buf)
	if err != nil {
		return 0, ctxOr(ctx, err)
	}
	elapsed := time.Since(t0)
	sess.Wait()
	if got := int64(first) + n; got < p.opts.TransferBytes {
		return 0, fmt.Errorf("only %d of %d bytes arrived %s", got, p.opts.TransferBytes, clip(string(stderr.Bytes()), 200))
	}
	// Counted bytes arrived over elapsed; no round trip is in it.
	return rate(n, elapsed, 0), nil
}

// rate is bytes per second; rtt (the latency in the timing) is taken off
// when it is a small part of the time.
func rate(n int64, elapsed, rtt time.Duration) float64 {
	if rtt > 0 && rtt < elapsed/2 {
		elapsed -= rtt
	}
	if elapsed <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

// waitReady reads up to the "R" marker (a login banner or shell noise may
// come first).
func waitReady(r io.Reader) error {
	b := make([]byte, 1)
	for i := 0; i < 4096; i++ {
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		if b[0] == 'R' {
			return nil
		}
	}
	return errors.New("no ready marker")
}

func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("stopped after %v: %w", ctx.Err(), ctx.Err())
	}
	return err
}

func join(windows bool, dir, name string) string {
	goos := "linux"
	if windows {
		goos = "windows"
	}
	return remotecmd.Join(goos, dir, name)
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func firstNonEmptyLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

func clip(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "?"))
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// System finds only the second PC's OS, architecture and shell kind
// ("posix" or "windows"); pairing uses it to pick how to install the key.
func System(ctx context.Context, c *ssh.Client) (goos, arch, shell string, err error) {
	p := &prober{c: c, opts: Options{StepTimeout: 20 * time.Second}, r: &Result{}}
	p.system(ctx)
	if p.r.Shell == "" || p.r.OS == "" {
		what := "the second PC's OS could not be determined"
		if len(p.r.Findings) > 0 {
			what = p.r.Findings[0].What
		}
		return p.r.OS, p.r.Arch, p.r.Shell, errors.New(what)
	}
	return p.r.OS, p.r.Arch, p.r.Shell, nil
}
