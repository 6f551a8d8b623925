// Package prepare puts what the relay needs on the second PC (`strata-service
// remote prepare`, the wizard's Prepare): the agent (its one copy through the
// remote shell, or sftp on Windows), the mmproj, the model's vocabulary stub
// and maybe strata-vision through the agent's framed file session, each
// skipped when its sha256 matches and resumed from its .part; then it starts
// the encoder there as the relay will and waits for its READY. It shares only
// the second PC's transport and the agent's command line with the relay
// (internal/relay/remote), never a running relay; its bounds are in
// internal/framing/bounds.
package prepare

import (
	"github.com/strata-companion/companion/internal/agentcmd"

	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/framing/bounds"
	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// Options say what `strata-service remote prepare` puts on the second PC.
type Options struct {
	Remote settings.Remote
	// Mmproj and Model are the server's local files (the config's vision
	// block): the mmproj is copied, the model's vocabulary stub is built.
	Mmproj, Model string
	// AgentBinary returns the path of a strata-vision-relay build for the
	// second PC's OS and architecture.
	AgentBinary func(goos, goarch string) (string, error)
	// LocalEncoder is a strata-vision to copy when the second PC has the
	// same OS and architecture as this one ("" copies nothing); files beside
	// it whose names end in .dll or contain .so go along (its libraries).
	LocalEncoder string
	// EncoderPath points at strata-vision already on the second PC
	// (absolute, or relative to RemoteDir); it wins over LocalEncoder.
	EncoderPath string
	// LocalOS/LocalArch are this PC's (runtime.GOOS/GOARCH).
	LocalOS, LocalArch string
	GPU                bool
	Threads, MaxTokens int
	// Progress receives lines for a person.
	Progress io.Writer
	// Dial defaults to SSHDialer(Remote).
	Dial remote.Dialer
}

// Result is what the settings should remember.
type Result struct {
	OS, Arch    string
	RemoteDir   string // absolute, as the agent reported it
	EncoderPath string
	NEmbd       int
	GPUs        []framing.GPU
	// NoGPU: nvidia-smi there found no NVIDIA GPU (GPUs is then empty).
	NoGPU bool
	// StartMS is the encoder's start there (a GPU's warm-up), measured.
	StartMS int
	// Where the encoder read during the check (its own start line).
	Where *framing.Where
}

// RemoteGPUs are gs as the settings record them.
func RemoteGPUs(gs []framing.GPU) []settings.RemoteGPU {
	var out []settings.RemoteGPU
	for _, g := range gs {
		out = append(out, settings.RemoteGPU{Index: g.Index, Name: g.Name, TotalMiB: g.TotalMiB})
	}
	return out
}

// DefaultRemoteDir is the folder (under the login's home) used when the
// settings name none.
const DefaultRemoteDir = "strata-companion"

// Prepare uploads the agent, the mmproj, the vocabulary stub (and maybe the
// encoder) to the second PC, resuming partial uploads and skipping files
// whose sha256 already matches, then starts the encoder there through the
// agent as the relay would, and waits for its READY.
func Prepare(ctx context.Context, o Options) (*Result, error) {
	s, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	defer s.conn.Close()
	if err := s.learnPlatform(); err != nil {
		return nil, err
	}
	// 1. The agent itself: the only file that cannot travel through the
	//    agent. It goes once through the remote shell, when missing or stale.
	cl, err := s.agent(ctx)
	if err != nil {
		return nil, err
	}
	// 2. The mmproj and the vocabulary stub.
	rm, rmodel, err := s.modelFiles(ctx, cl)
	if err != nil {
		cl.close()
		return nil, err
	}
	// 3. strata-vision: pointed at, or copied when this PC's build fits.
	if err := s.encoder(ctx, cl); err != nil {
		return nil, err
	}
	// 4. Start the encoder there exactly as the relay will, and see READY.
	if err := s.checkEncoder(ctx, rm, rmodel); err != nil {
		return nil, err
	}
	return s.res, nil
}

// preparation is one Prepare under way: its options, the connection to the
// second PC, where progress goes, and what it found so far.
type preparation struct {
	o    Options
	p    io.Writer
	conn remote.Conn
	res  *Result
	// copyEncoder: this PC's strata-vision build goes to the second PC.
	// keepEncoder: the pairing did not allow this build, so the second PC
	// keeps the encoder it has.
	copyEncoder, keepEncoder bool
}

// connect fills o's defaults and dials the second PC.
func connect(ctx context.Context, o Options) (*preparation, error) {
	var p io.Writer = io.Discard
	if o.Progress != nil {
		p = &lockedWriter{w: o.Progress}
	}
	if o.Dial == nil {
		o.Dial = remote.SSHDialer(o.Remote)
	}
	if o.Remote.RemoteDir == "" {
		o.Remote.RemoteDir = DefaultRemoteDir
	}
	fmt.Fprintf(p, "connecting to %s ...\n", o.Remote.Host)
	conn, err := o.Dial(ctx, bounds.PrepareDial)
	if err != nil {
		return nil, err
	}
	return &preparation{o: o, p: p, conn: conn, res: &Result{OS: o.Remote.OS, Arch: o.Remote.Arch}}, nil
}

// learnPlatform asks the second PC its OS and architecture when the
// settings do not say them.
func (s *preparation) learnPlatform() error {
	res := s.res
	if res.OS == "" || res.Arch == "" {
		var err error
		if res.OS, res.Arch, err = detectPlatform(s.conn); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.p, "second PC: %s/%s\n", res.OS, res.Arch)
	return nil
}

// agent starts the agent's file session, installing the agent first when
// it is missing or not this build; it decides whether this PC's encoder
// may be copied (copyEncoder, keepEncoder).
func (s *preparation) agent(ctx context.Context) (*client, error) {
	o, res, p, dir := s.o, s.res, s.p, s.o.Remote.RemoteDir
	agentBin, err := o.AgentBinary(res.OS, res.Arch)
	if err != nil {
		return nil, err
	}
	agentSum, err := sha256File(agentBin)
	if err != nil {
		return nil, err
	}
	if err := remotecmd.CheckPath("remote_dir", dir); err != nil {
		return nil, err
	}
	filesCmd, err := s.filesCommand()
	if err != nil {
		return nil, err
	}
	// The first try is quiet: on a fresh second PC its shell answers "sh: 1:
	// .../strata-vision-relay: not found", which is expected, not an error.
	cl, err := startClient(ctx, s.conn, filesCmd, io.Discard)
	if err != nil && strings.Contains(err.Error(), "was not allowed at pairing") {
		if filesCmd, err = s.keepTheirEncoder(); err != nil {
			return nil, err
		}
		cl, err = startClient(ctx, s.conn, filesCmd, io.Discard)
	}
	if err != nil && agentMissing(err) {
		fmt.Fprintf(p, "no agent on the second PC yet (a fresh second PC)\n")
	}
	if err == nil {
		cl.p = p
		fi, serr := cl.stat(SelfName)
		if serr != nil || fi.SHA256 != agentSum {
			cl.close()
			cl, err = nil, errors.New("it is another build than this PC's")
		}
	}
	if err == nil {
		fmt.Fprintln(p, "the agent is up to date")
	} else if cl, err = s.installAgent(ctx, agentBin, agentSum, filesCmd, err); err != nil {
		return nil, err
	}
	res.RemoteDir = cl.info.Dir
	return cl, nil
}

// filesCommand is the agent's file session with the programs it may
// install (strata-vision and its libraries, when this PC's build fits):
// the agent takes a program only with its sha256 announced here
// (prepare's checksummed install).
func (s *preparation) filesCommand() (string, error) {
	o, res := s.o, s.res
	var installs []string
	s.copyEncoder = o.EncoderPath == "" && o.LocalEncoder != "" && o.LocalOS == res.OS && o.LocalArch == res.Arch
	if s.copyEncoder {
		var err error
		if installs, err = InstallSums(o.LocalEncoder); err != nil {
			return "", err
		}
	}
	return s.filesCommandAllowing(installs)
}

// keepTheirEncoder is the file session that installs no program: an
// agent-only key pinned other builds at pairing (Strata's update brought a
// new strata-vision since). The second PC keeps the encoder it has, which
// reads pictures as before; only a new pairing (the user's own login) may
// install this build.
func (s *preparation) keepTheirEncoder() (string, error) {
	s.copyEncoder, s.keepEncoder = false, true
	return s.filesCommandAllowing(nil)
}

func (s *preparation) filesCommandAllowing(installs []string) (string, error) {
	res := s.res
	files := agentcmd.Command{Program: remote.RemoteJoin(res.OS, s.o.Remote.RemoteDir, remote.AgentName(res.OS)), Verb: agentcmd.VerbAgent,
		Agent: agentcmd.Agent{InstallSHA256: installs}}
	return files.Quote(res.OS)
}

// installAgent copies the agent through the remote shell and starts its
// file session (filesCmd), which must be the build just copied. first is
// why the agent already there did not serve (said when no install is
// possible: it is often the real cause).
func (s *preparation) installAgent(ctx context.Context, agentBin, agentSum, filesCmd string, first error) (*client, error) {
	p, dir := s.p, s.o.Remote.RemoteDir
	fmt.Fprintf(p, "installing the agent (%s) in %s ...\n", filepath.Base(agentBin), dir)
	if err := bootstrapAgent(ctx, s.conn, s.res.OS, dir, agentBin, p); err != nil {
		if strings.Contains(err.Error(), framing.GateRefusal) {
			return nil, fmt.Errorf("the second PC's agent did not serve (%v), and the companion's key there is agent-only, so it cannot install another: if it is missing or another build, pair the second PC again (strata-service remote pair, or the setup wizard's Pair), which installs this build with your own login", strings.TrimSpace(first.Error()))
		}
		return nil, err
	}
	cl, err := startClient(ctx, s.conn, filesCmd, p)
	if err != nil {
		return nil, fmt.Errorf("the agent was copied to the second PC but does not start: %v", err)
	}
	if fi, err := cl.stat(SelfName); err != nil || fi.SHA256 != agentSum {
		cl.close()
		return nil, errors.New("the agent on the second PC is not the one just copied (is another copy running and locked? stop Strata and try again)")
	}
	return cl, nil
}

// modelFiles uploads the mmproj and the model's vocabulary stub (built
// here); it returns their names on the second PC.
func (s *preparation) modelFiles(ctx context.Context, cl *client) (rm, rmodel string, err error) {
	o := s.o
	rm, rmodel = remote.RemoteFiles(o.Mmproj, o.Model)
	if err := cl.upload(ctx, o.Mmproj, rm, 0o644); err != nil {
		return "", "", err
	}
	stub, err := os.CreateTemp("", "strata-vocab-*.gguf")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(stub.Name())
	fmt.Fprintf(s.p, "building the vocabulary stub of %s ...\n", filepath.Base(o.Model))
	bw := bufio.NewWriterSize(stub, 1<<20)
	err = gguf.WriteVocabStub(o.Model, bw)
	if err == nil {
		err = bw.Flush()
	}
	stub.Close()
	if err != nil {
		return "", "", err
	}
	if err := cl.upload(ctx, stub.Name(), rmodel, 0o644); err != nil {
		return "", "", err
	}
	return rm, rmodel, nil
}

// encoder decides which strata-vision the second PC runs (res.EncoderPath),
// copies this PC's build when that is the one, checks that it is there and
// asks the agent for its GPUs. It ends the file session cl.
func (s *preparation) encoder(ctx context.Context, cl *client) error {
	o, res := s.o, s.res
	encName := "strata-vision"
	if res.OS == "windows" {
		encName += ".exe"
	}
	switch {
	case o.EncoderPath != "":
		res.EncoderPath = o.EncoderPath
	case s.copyEncoder:
		if err := s.copyLocalEncoder(ctx, cl, encName); err != nil {
			cl.close()
			return err
		}
		res.EncoderPath = encName
	case o.Remote.EncoderPath != "":
		res.EncoderPath = o.Remote.EncoderPath
	default:
		res.EncoderPath = encName
	}
	// The agent answers only about files in its own folder: an encoder
	// elsewhere (--encoder ABSOLUTE) is proved by its start below.
	fi := framing.FileInfo{Exists: true}
	var err error
	if !remotecmd.IsAbs(res.OS, res.EncoderPath) {
		fi, err = cl.stat(remote.RemoteJoin(res.OS, res.RemoteDir, res.EncoderPath))
	}
	gpus, gerr := cl.status()
	cl.close()
	if gerr == nil {
		res.GPUs, res.NoGPU = gpus.GPUs, len(gpus.GPUs) == 0
	}
	if s.keepEncoder && (err != nil || !fi.Exists) {
		return s.notPinned()
	}
	if err != nil || !fi.Exists {
		return s.missing()
	}
	if s.keepEncoder {
		fmt.Fprintf(s.p, "this PC's strata-vision build was not allowed when the second PC was paired, so it keeps the one it has (%s); pair it again to install this build\n", res.EncoderPath)
	}
	return nil
}

// copyLocalEncoder uploads this PC's strata-vision as encName, and the
// libraries beside it.
func (s *preparation) copyLocalEncoder(ctx context.Context, cl *client, encName string) error {
	if err := cl.upload(ctx, s.o.LocalEncoder, encName, 0o755); err != nil {
		return err
	}
	for _, lib := range siblingLibs(s.o.LocalEncoder) {
		if err := cl.upload(ctx, lib, filepath.Base(lib), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// notPinned: an agent-only key pinned other builds at pairing, and the
// second PC has no encoder of its own to keep.
func (s *preparation) notPinned() error {
	return fmt.Errorf("the companion's key on the second PC runs only the agent, and this PC's strata-vision build (%s) was not allowed when it was paired: "+
		"pair the second PC again (strata-service remote pair, or the setup wizard's Pair), which allows this PC's build, or name an encoder already there (prepare --encoder PATH)", s.o.LocalEncoder)
}

// missing: there is no strata-vision where the second PC would run it.
func (s *preparation) missing() error {
	res := s.res
	return fmt.Errorf("there is no strata-vision at %s on the second PC; install Strata's engine there and pass --encoder <its strata-vision>, or run prepare on a server with the same OS and architecture so it can be copied",
		remote.RemoteJoin(res.OS, res.RemoteDir, res.EncoderPath))
}

// notFound says the encoder's start failed because an encoder named by an
// absolute path (not looked at before) is not there.
func (s *preparation) notFound(msg string) bool {
	m := strings.ToLower(msg)
	return remotecmd.IsAbs(s.res.OS, s.res.EncoderPath) && (strings.Contains(m, "no such file") || strings.Contains(m, "cannot find the file"))
}

// checkEncoder starts the encoder on the second PC exactly as the relay
// will, waits for its READY and records what it said.
func (s *preparation) checkEncoder(ctx context.Context, rm, rmodel string) error {
	cl, err := s.startEncoder(ctx, rm, rmodel)
	if err != nil {
		return err
	}
	defer cl.close()
	t0 := time.Now()
	st, err := s.waitReady(ctx, cl)
	if err != nil {
		return err
	}
	s.ready(st, time.Since(t0))
	return nil
}

// startEncoder starts the agent with the encoder on the device the relay
// will choose from what was just found (RemoteDevice), unless the flags
// say otherwise.
func (s *preparation) startEncoder(ctx context.Context, rm, rmodel string) (*client, error) {
	o, res := s.o, s.res
	choice := o.Remote
	choice.GPUs, choice.NoGPU = RemoteGPUs(res.GPUs), res.NoGPU
	if o.GPU && !res.NoGPU {
		choice.Device = settings.DeviceGPU // asked for (--gpu), and there is one
	}
	d := remote.RemoteDevice(choice)
	if o.Threads > 0 {
		d.Threads = o.Threads
	}
	if o.MaxTokens > 0 {
		d.MaxTokens = o.MaxTokens
	}
	args := remote.AgentArgs{OS: res.OS, RemoteDir: res.RemoteDir, Encoder: res.EncoderPath, Mmproj: rm, Model: rmodel,
		GPU: d.GPU, Threads: d.Threads, MaxTokens: d.MaxTokens, CUDADevice: d.CUDAIndex()}
	agentCmd, err := args.Command()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.p, "starting the encoder on the second PC: %s\n", agentCmd)
	cl, err := startClient(ctx, s.conn, agentCmd, s.p)
	if err != nil {
		if remotecmd.IsAbs(res.OS, res.EncoderPath) && strings.Contains(err.Error(), "outside the agent's folder") {
			return nil, fmt.Errorf("the companion's key on the second PC runs only the agent, and the encoder %s was not allowed when it was paired; "+
				"pair again with that encoder allowed: strata-service remote pair --encoder %s %s, then run prepare again",
				res.EncoderPath, remotecmd.POSIX(res.EncoderPath), sshx.Endpoint{User: o.Remote.User, Host: o.Remote.Host, Port: o.Remote.Port})
		}
		return nil, err
	}
	return cl, nil
}

// waitReady wakes the encoder and waits for its status: running, or why not.
func (s *preparation) waitReady(ctx context.Context, cl *client) (framing.StatusInfo, error) {
	var st framing.StatusInfo
	if err := cl.fw.Write(framing.Wake); err != nil {
		return st, err
	}
	t, b, err := cl.next(ctx, bounds.PrepareWake, framing.StatusReply)
	if err != nil {
		return st, err
	}
	if t == framing.Error {
		if s.notFound(errMsg(b)) {
			return st, s.missing()
		}
		return st, errors.New(errMsg(b))
	}
	json.Unmarshal(b, &st)
	if st.Encoder != "running" && s.notFound(st.Error) {
		return st, s.missing()
	}
	if st.Encoder != "running" {
		return st, fmt.Errorf("the encoder on the second PC did not start: %s", st.Error)
	}
	return st, nil
}

// ready records the running encoder's answer (its n_embd, its start, where
// it reads, the GPUs it found) and says it.
func (s *preparation) ready(st framing.StatusInfo, took time.Duration) {
	res, p := s.res, s.p
	res.NEmbd, res.StartMS, res.Where = st.NEmbd, int(took.Milliseconds()), st.Where
	if len(st.GPUs) > 0 {
		res.GPUs, res.NoGPU = st.GPUs, false
	}
	fmt.Fprintf(p, "the encoder on the second PC answered READY %d after %.1f s\n", st.NEmbd, float64(res.StartMS)/1000)
	if w := st.Where; w != nil {
		switch {
		case w.Device == "gpu":
			fmt.Fprintf(p, "  it reads pictures on its GPU %s (%s)\n", w.GPU, w.VRAMWords())
		case w.Degraded():
			fmt.Fprintf(p, "  it reads pictures on its CPU although a GPU was asked for: %s\n", w.Reason)
		default:
			fmt.Fprintf(p, "  it reads pictures on its CPU (%d threads)\n", w.Threads)
		}
	}
	for _, g := range st.GPUs {
		fmt.Fprintf(p, "  GPU %d: %s, %s\n", g.Index, g.Name, g.MemWords())
	}
	if st.GPUProblem != "" {
		fmt.Fprintf(p, "  its GPUs: %s\n", st.GPUProblem)
	}
}

// InstallSums are the sha256 sums of what prepare installs for this PC's
// strata-vision: the program and the libraries beside it. Pairing an
// agent-only key pins them (pairing.Options.AllowInstall).
func InstallSums(localEncoder string) ([]string, error) {
	var out []string
	for _, f := range append([]string{localEncoder}, siblingLibs(localEncoder)...) {
		sum, err := sha256File(f)
		if err != nil {
			return nil, err
		}
		out = append(out, sum)
	}
	return out, nil
}

// agentMissing says a start failed because the agent is not there (a fresh
// second PC): the shell's "not found" / "No such file", cmd.exe's "is not
// recognized".
func agentMissing(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "not found") || strings.Contains(m, "no such file") || strings.Contains(m, "is not recognized")
}

// status asks the agent for its status (its GPUs by nvidia-smi).
func (c *client) status() (framing.StatusInfo, error) {
	var st framing.StatusInfo
	if err := c.fw.Write(framing.AskStatus); err != nil {
		return st, err
	}
	t, b, err := c.next(context.Background(), bounds.PrepareStatus, framing.StatusReply)
	if err != nil {
		return st, err
	}
	if t == framing.Error {
		return st, errors.New(errMsg(b))
	}
	return st, json.Unmarshal(b, &st)
}

// SelfName asks the agent about its own executable (see agent.SelfName).
const SelfName = "@self"

func siblingLibs(exe string) []string {
	ents, _ := os.ReadDir(filepath.Dir(exe))
	var out []string
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".dll") || strings.Contains(n, ".so")) {
			out = append(out, filepath.Join(filepath.Dir(exe), e.Name()))
		}
	}
	return out
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// runOutput runs one command on the second PC and returns its stdout.
func runOutput(conn remote.Conn, cmd string) (string, error) {
	proc, err := conn.Start(cmd)
	if err != nil {
		return "", err
	}
	defer proc.Close()
	proc.Stdin.Close()
	go io.Copy(io.Discard, proc.Stderr)
	b, err := io.ReadAll(io.LimitReader(proc.Stdout, 4096))
	return string(b), err
}

// detectPlatform asks the second PC's shell: uname on Unix, cmd.exe's
// PROCESSOR_ARCHITECTURE on Windows.
func detectPlatform(conn remote.Conn) (goos, goarch string, err error) {
	if out, _ := runOutput(conn, "uname -sm"); out != "" {
		f := strings.Fields(out)
		if len(f) == 2 {
			goos = strings.ToLower(f[0])
			switch f[1] {
			case "x86_64", "amd64":
				goarch = "amd64"
			case "aarch64", "arm64":
				goarch = "arm64"
			}
			if goarch != "" && (goos == "linux" || goos == "darwin") {
				return goos, goarch, nil
			}
		}
	}
	if out, _ := runOutput(conn, "echo %PROCESSOR_ARCHITECTURE%"); out != "" {
		switch strings.TrimSpace(out) {
		case "AMD64":
			return "windows", "amd64", nil
		case "ARM64":
			return "windows", "arm64", nil
		}
	}
	return "", "", errors.New("cannot tell the second PC's system (neither `uname` nor cmd.exe answered as expected); set its OS and architecture in the companion settings")
}
