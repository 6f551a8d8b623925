package relay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/remotecmd"
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
	// (--flash-attn, --min-tokens, ones it does not know).
	Extra []string
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

// Argv is the agent's command line on the second PC, unquoted.
func (a AgentArgs) Argv() []string {
	j := func(n string) string { return RemoteJoin(a.OS, a.RemoteDir, n) }
	argv := []string{j(AgentName(a.OS)), "agent", "--encoder", j(a.Encoder), "--mmproj", j(a.Mmproj), "--model", j(a.Model)}
	if a.GPU {
		argv = append(argv, "--gpu")
	}
	if a.Threads > 0 {
		argv = append(argv, "--threads", strconv.Itoa(a.Threads))
	}
	if a.MaxTokens > 0 {
		argv = append(argv, "--max-tokens", strconv.Itoa(a.MaxTokens))
	}
	if a.IdleStopS > 0 {
		argv = append(argv, "--idle-stop", strconv.Itoa(a.IdleStopS))
	}
	if a.GPU && a.CUDADevice != nil {
		argv = append(argv, "--cuda-device", strconv.Itoa(*a.CUDADevice))
	}
	for _, x := range a.Extra {
		argv = append(argv, "--encoder-arg", x)
	}
	return argv
}

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
