package linkprobe

import (
	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/nvsmi"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// The probe through the agent: where the companion's key runs only the
// agent (its gate refuses every shell command), the agent's own `probe`,
// `sink` and `source N` (framing.ProbeInfo) answer what the shell commands
// would.

// Via says how the probe asked the second PC.
const (
	ViaShell = "shell" // plain commands in the login shell
	ViaAgent = "agent" // the agent's probe, sink and source
)

// gateRefused reports the gate's answer to a command it does not allow.
func gateRefused(out []byte, status int) bool {
	return status == framing.GateRefusalStatus && bytes.Contains(out, []byte(framing.GateRefusal))
}

// agentOS is the OS the agent's command lines are quoted for: the agent's
// own word once it answered, else Options.AgentOS, else what its path looks
// like.
func (p *prober) agentOS() string {
	switch {
	case p.r.OS != "":
		return p.r.OS
	case p.opts.AgentOS != "":
		return p.opts.AgentOS
	case strings.Contains(p.opts.Agent, `\`) || (len(p.opts.Agent) > 1 && p.opts.Agent[1] == ':'):
		return "windows"
	}
	return "linux"
}

// agentCommand quotes c (agentcmd's definition, which the gate admits) for
// the agent's program on the second PC.
func (p *prober) agentCommand(c agentcmd.Command) (string, error) {
	c.Program = p.opts.Agent
	return c.Quote(p.agentOS())
}

// runViaAgent is Run's work through the agent.
func (p *prober) runViaAgent(ctx context.Context) {
	p.r.Via = ViaAgent
	if p.opts.Agent == "" {
		p.find(probe.SeverityError, "the second PC lets this key run only the Strata Companion agent, and this probe does not know where the agent is there",
			"pair the second PC again (strata-service remote pair), which records the agent's folder for the probe")
		return
	}
	info, ok := p.agentProbe(ctx)
	if !ok {
		return
	}
	p.r.OS, p.r.Arch, p.r.Uname = info.OS, info.Arch, info.Uname
	if goos, arch, ok := parseUname(info.Uname); ok && goos == info.OS {
		p.r.Arch = arch // the machine's, not only the agent build's
	}
	p.r.Shell = "posix"
	if remotecmd.Windows(info.OS) {
		p.r.Shell = "windows"
	}
	p.agentGPUs(ctx, info)
	p.agentFiles(info)
	if !p.opts.NoLink {
		p.rtt(ctx)
		p.agentThroughput(ctx)
	}
}

// agentProbe runs `<agent> probe` and reads its one JSON line.
func (p *prober) agentProbe(ctx context.Context) (*framing.ProbeInfo, bool) {
	c := agentcmd.Command{Verb: agentcmd.VerbProbe}
	if p.opts.RemoteDir != "" {
		c.Probe.Encoder = p.encoderName()
		c.Probe.Files = p.opts.ModelFiles
	}
	cmd, err := p.agentCommand(c)
	if err != nil {
		p.find(probe.SeverityError, "the agent's probe cannot be asked safely: "+err.Error(), "pair the second PC again: its folder must be a plain one")
		return nil, false
	}
	out, status, err := p.exec(ctx, cmd)
	if err != nil {
		p.find(probe.SeverityError, "could not ask the agent on the second PC: "+err.Error(),
			"check that the second PC is on and reachable, then try again")
		return nil, false
	}
	info, perr := parseProbeInfo(out)
	switch {
	case perr == nil && status == 0:
		return info, true
	case gateRefused(out, status):
		p.find(probe.SeverityError, "the agent on the second PC is older than this companion and cannot answer a probe ("+clip(string(out), 200)+")",
			"pair the second PC again (strata-service remote pair), which installs this companion's agent there")
	case commandNotFound(out, status):
		p.find(probe.SeverityError, "the agent is not in "+p.opts.Agent+" on the second PC ("+clip(string(out), 200)+")",
			"pair the second PC again (strata-service remote pair), which puts the agent there")
	default:
		p.find(probe.SeverityError, fmt.Sprintf("the agent on the second PC gave no readable answer to its probe (exit status %d: %s; %q)", status, errString(perr), clip(string(out), 200)),
			"pair the second PC again (strata-service remote pair) to install this companion's agent there; if it keeps happening, run the probe with your own login (--identity or --password-stdin)")
	}
	return nil, false
}

// parseProbeInfo reads the agent's reply: its last non-empty line is the
// JSON (a login banner may come first).
func parseProbeInfo(out []byte) (*framing.ProbeInfo, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return nil, errors.New("it printed nothing")
	}
	var info framing.ProbeInfo
	dec := json.NewDecoder(strings.NewReader(last))
	if err := dec.Decode(&info); err != nil {
		return nil, fmt.Errorf("its answer is not the probe's JSON: %v", err)
	}
	if info.OS == "" || info.Arch == "" {
		return nil, errors.New("its answer names no OS or architecture")
	}
	return &info, nil
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// agentGPUs reads the agent's raw nvidia-smi runs with the local probe's
// query sequence and parser: a runner that answers each query with what the
// agent recorded for it.
func (p *prober) agentGPUs(ctx context.Context, info *framing.ProbeInfo) {
	where := "on " + p.r.Host
	run := func(ctx context.Context, args []string) ([]byte, error) {
		if !info.NvidiaSMIFound {
			return nil, fmt.Errorf("no nvidia-smi on the second PC: %w", nvsmi.ErrNotFound)
		}
		want := strings.Join(args, " ")
		for _, r := range info.Nvidia {
			if r.Args != want {
				continue
			}
			out := []byte(r.Output)
			switch {
			case r.Error == framing.NvidiaNotFound:
				return out, fmt.Errorf("no nvidia-smi on the second PC: %w", nvsmi.ErrNotFound)
			case r.Error == framing.NvidiaTimeout:
				return out, fmt.Errorf("nvidia-smi on the second PC: %s: %w", r.Detail, context.DeadlineExceeded)
			case r.Error != "":
				return out, fmt.Errorf("nvidia-smi on the second PC (%s): %w", r.Detail, nvsmi.ErrStart)
			case r.Status != 0:
				return out, fmt.Errorf("nvidia-smi exited with status %d", r.Status)
			}
			return out, nil
		}
		// An older agent did not ask this (the MIG query): as if unasked.
		return nil, fmt.Errorf("the agent did not run nvidia-smi %s: %w", want, nvsmi.ErrNotRun)
	}
	gpus, query, problems := probe.QueryNvidia(ctx, run, where)
	p.r.GPUs = append(p.r.GPUs, gpus...)
	p.r.NvidiaQuery = query
	p.r.Findings = append(p.r.Findings, problems...)
}

// encoderName is strata-vision as Options name it (relative to RemoteDir
// or absolute).
func (p *prober) encoderName() string {
	if p.opts.EncoderPath != "" {
		return p.opts.EncoderPath
	}
	if remotecmd.Windows(p.agentOS()) {
		return "strata-vision.exe"
	}
	return "strata-vision"
}

// agentFiles fills the file checks from the agent's answer.
func (p *prober) agentFiles(info *framing.ProbeInfo) {
	dir := p.opts.RemoteDir
	if dir == "" {
		return
	}
	goos := info.OS
	encPath := remotecmd.Join(goos, dir, p.encoderName())
	p.r.Encoder = &File{Path: encPath}
	if info.Encoder != nil {
		p.r.Encoder.Present = info.Encoder.Present
	}
	p.r.EncoderPresent = p.r.Encoder.Present
	byName := map[string]bool{}
	for _, f := range info.Files {
		byName[f.Name] = f.Present
	}
	for _, f := range p.opts.ModelFiles {
		p.r.ModelFiles = append(p.r.ModelFiles, File{Path: remotecmd.Join(goos, dir, f), Present: byName[f]})
	}
	if p.opts.ModelFiles == nil {
		for _, n := range info.GGUF {
			p.r.ModelFiles = append(p.r.ModelFiles, File{Path: remotecmd.Join(goos, dir, n), Present: true})
		}
	}
	p.filesVerdict(dir)
}

// agentThroughput measures both ways through the agent's sink and source.
func (p *prober) agentThroughput(ctx context.Context) {
	sink, err := p.agentCommand(agentcmd.Command{Verb: agentcmd.VerbSink})
	if err == nil {
		var up float64
		up, err = p.measureUp(ctx, sink)
		p.r.UpBytesPerSec = up
	}
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the upload speed to the second PC through its agent: "+err.Error(), "")
	}
	source, err := p.agentCommand(agentcmd.Command{Verb: agentcmd.VerbSource, Bytes: p.opts.TransferBytes})
	if err == nil {
		var down float64
		down, err = p.measureDown(ctx, source)
		p.r.DownBytesPerSec = down
	}
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the download speed from the second PC through its agent: "+err.Error(), "")
	}
}

// sinkCount reads what follows the sink's "D": " <bytes read>\n".
func sinkCount(r io.Reader) (int64, error) {
	var b bytes.Buffer
	one := make([]byte, 1)
	for b.Len() < 32 {
		if _, err := io.ReadFull(r, one); err != nil {
			break
		}
		if one[0] == '\n' {
			break
		}
		b.WriteByte(one[0])
	}
	n, err := strconv.ParseInt(strings.TrimSpace(b.String()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the sink's count %q is not a number", b.String())
	}
	return n, nil
}
