package relay

import (
	"path"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/gguf"
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
// style; an absolute name is kept as it is.
func RemoteJoin(goos, dir, name string) string {
	if goos == "windows" {
		if strings.HasPrefix(name, `\`) || strings.HasPrefix(name, "/") || (len(name) > 1 && name[1] == ':') {
			return name
		}
		if dir == "" {
			return name
		}
		return strings.TrimRight(dir, `\/`) + `\` + name
	}
	if strings.HasPrefix(name, "/") || dir == "" {
		return name
	}
	return path.Join(dir, name)
}

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
// quotes, once per session; pictures never pass through a shell.
func (a AgentArgs) Command() string { return QuoteCommand(a.OS, a.Argv()) }

// QuoteCommand quotes argv for goos's login shell.
func QuoteCommand(goos string, argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		if goos == "windows" {
			q[i] = quoteWindows(s)
		} else {
			q[i] = quotePOSIX(s)
		}
	}
	return strings.Join(q, " ")
}

func quotePOSIX(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteWindows(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"&|<>^%") {
		return s
	}
	// Folder names with quotes are not allowed on Windows; %, ^ inside
	// quotes are left to cmd.exe as they are.
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
