package remote

import (
	"fmt"
	"strings"

	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
)

// AgentName is the relay's file name on a second PC of that OS.
func AgentName(goos string) string {
	if goos == "windows" {
		return "strata-vision-relay.exe"
	}
	return "strata-vision-relay"
}

// RemoteOS guesses the second PC's OS when the settings do not say:
// a folder like C:\... or one with backslashes is Windows.
func RemoteOS(settingsOS, remoteDir string) string {
	if settingsOS != "" {
		return settingsOS
	}
	if strings.Contains(remoteDir, `\`) || (len(remoteDir) > 1 && remoteDir[1] == ':') {
		return "windows"
	}
	return "linux"
}

// RemoteJoin joins a file name to a folder on the second PC, in its OS's
// style; an absolute name is kept as it is (remotecmd.Join).
func RemoteJoin(goos, dir, name string) string { return remotecmd.Join(goos, dir, name) }

// AgentArgs are the agent's settings for one relay.
type AgentArgs struct {
	OS        string // the second PC's OS ("linux", "windows")
	RemoteDir string
	Encoder   string // strata-vision there (absolute, or relative to RemoteDir)
	Mmproj    string // the mmproj's file name there (in RemoteDir)
	Model     string // the vocabulary stub's file name there (in RemoteDir)
	GPU       bool
	Threads   int
	MaxTokens int
	IdleStopS int
	// CUDADevice is the GPU there by nvidia-smi index (nil: CUDA's first).
	CUDADevice *int
	// Extra are encoder arguments Strata passed that the relay passes on
	// (--flash-attn, --min-tokens, ones it does not know): they travel as
	// data (agentcmd's --encoder-args), whatever they hold.
	Extra []string
}

// AgentArgsFor is the agent's settings for the second PC in r, for the
// mmproj and model Strata passed and Strata's other encoder arguments
// (StrataArgs.Extra): what the relay asks the agent for each session. The
// second PC's device, image tokens and threads come from what prepare found
// there and what the user chose (RemoteDevice), never from the --gpu,
// --threads and --max-tokens Strata passes: those are the config's, which
// says gpu false so that Strata does not count the relay as a GPU encoder.
func AgentArgsFor(r settings.Remote, mmproj, model string, extra []string) AgentArgs {
	osName := RemoteOS(r.OS, r.RemoteDir)
	encoder := r.EncoderPath
	if encoder == "" {
		encoder = "strata-vision"
		if osName == "windows" {
			encoder += ".exe"
		}
	}
	rm, rmodel := RemoteFiles(mmproj, model)
	d := RemoteDevice(r)
	return AgentArgs{OS: osName, RemoteDir: r.RemoteDir, Encoder: encoder, Mmproj: rm, Model: rmodel,
		GPU: d.GPU, Threads: d.Threads, MaxTokens: d.MaxTokens, IdleStopS: r.IdleStopS, CUDADevice: d.CUDAIndex(), Extra: extra}
}

// RemoteFiles names the mmproj and vocabulary stub on the second PC for the
// local files Strata passes: the mmproj keeps its name, the model becomes
// its vocabulary stub (gguf.StubName). prepare uploads them under these names.
func RemoteFiles(localMmproj, localModel string) (mmproj, model string) {
	return baseName(localMmproj), gguf.StubName(baseName(localModel))
}

// baseName takes the last element of a Windows or Unix path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Cmd is the agent's command line on the second PC (agentcmd's one
// definition, which the gate and the agent parse back). Strata's arguments
// that the agent sets itself (agentcmd.EncoderOwned) are never passed on.
func (a AgentArgs) Cmd() agentcmd.Command {
	j := func(n string) string { return RemoteJoin(a.OS, a.RemoteDir, n) }
	var extra []string
	for _, x := range a.Extra {
		if !agentcmd.IsEncoderOwned(x) {
			extra = append(extra, x)
		}
	}
	c := agentcmd.Command{Program: j(AgentName(a.OS)), Verb: agentcmd.VerbAgent, Agent: agentcmd.Agent{
		Encoder: j(a.Encoder), Mmproj: j(a.Mmproj), Model: j(a.Model), GPU: a.GPU, Threads: a.Threads,
		MaxTokens: a.MaxTokens, IdleStopS: a.IdleStopS, EncoderArgs: extra}}
	if a.GPU && a.CUDADevice != nil {
		d := *a.CUDADevice
		c.Agent.CUDADevice = &d
	}
	return c
}

// Argv is the agent's command line on the second PC, unquoted.
func (a AgentArgs) Argv() []string { return a.Cmd().Argv(a.OS) }

// Command is Argv as one ssh command string, quoted for the second PC's
// shell (sh, or cmd.exe on Windows). This is the only string the relay ever
// quotes, once per session; pictures never pass through a shell. Every
// folder and file name in it is checked first (remotecmd.CheckPath): shell
// syntax is refused, not quoted.
func (a AgentArgs) Command() (string, error) {
	for _, p := range []struct{ what, v string }{{"remote_dir", a.RemoteDir}, {"encoder_path", a.Encoder}, {"the mmproj's name", a.Mmproj}, {"the model's name", a.Model}} {
		if err := remotecmd.CheckPath(p.what, p.v); err != nil {
			return "", fmt.Errorf("the second PC's record cannot be used: %w; pair and prepare the second PC again", err)
		}
	}
	return QuoteCommand(a.OS, a.Argv())
}

// QuoteCommand quotes argv for goos's login shell (remotecmd.Quote).
func QuoteCommand(goos string, argv []string) (string, error) { return remotecmd.Quote(goos, argv) }
