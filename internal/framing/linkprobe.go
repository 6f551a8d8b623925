package framing

// The agent's link-probe subcommands, for a second PC whose companion key
// runs only the agent (its gate allows these and nothing like a shell):
//
//	<agent> probe [--encoder PATH] [--file NAME]...  one JSON ProbeInfo line
//	<agent> sink       "R" once it reads, then "D <bytes read>\n" at the end of its input
//	<agent> source N   "R", then N bytes that do not compress (N <= MaxSourceBytes)
//
// The "R" marks the moment the agent is ready, so that its start is never
// timed as transfer; it is the same marker the shell's sink and source print.

// MaxSourceBytes is the most `<agent> source N` writes (1 GiB).
const MaxSourceBytes = 1 << 30

// GateRefusal starts the sentence the gate (the forced command of an
// agent-only key) writes to stderr, with exit status GateRefusalStatus, for
// every command it does not allow, a shell's included.
const (
	GateRefusal       = "this key only runs the Strata Companion agent"
	GateRefusalStatus = 126
)

// ProbeInfo is what `<agent> probe` prints: the facts about its PC the link
// probe would otherwise ask a shell for. nvidia-smi's output is raw: the
// companion reads it with the very parser it uses for a shell's.
type ProbeInfo struct {
	Version string `json:"version"` // the agent's build
	OS      string `json:"os"`      // Go's GOOS of the agent
	Arch    string `json:"arch"`    // Go's GOARCH of the agent
	// Uname is `uname -sm`'s line on Linux and macOS, the OS version on
	// Windows ("Microsoft Windows [Version 10.0.22631]", as ver says it).
	Uname string `json:"uname"`
	// Dir is the agent's own folder.
	Dir string `json:"dir"`
	// NvidiaSMIFound says an nvidia-smi was found (on PATH or where drivers
	// put it); NvidiaSMI is the one run.
	NvidiaSMIFound bool   `json:"nvidia_smi_found"`
	NvidiaSMI      string `json:"nvidia_smi,omitempty"`
	// Nvidia are its runs, in order: the rich query, and the basic one when
	// the driver refused the rich one.
	Nvidia []NvidiaRun `json:"nvidia,omitempty"`
	// Encoder is the --encoder asked about; Files the --file names.
	Encoder *ProbeFile  `json:"encoder,omitempty"`
	Files   []ProbeFile `json:"files"`
	// GGUF names the *.gguf files in Dir.
	GGUF []string `json:"gguf"`
}

// NvidiaRun is one nvidia-smi run: its arguments (space-separated), what it
// printed (stdout and stderr), its exit status (-1: none, see Error).
type NvidiaRun struct {
	Args   string `json:"args"`
	Output string `json:"output"`
	Status int    `json:"status"`
	// Error is why there is no exit status: "not-found", "start-failed" or
	// "timeout", with Detail the error's text.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// The NvidiaRun errors.
const (
	NvidiaNotFound    = "not-found"
	NvidiaStartFailed = "start-failed"
	NvidiaTimeout     = "timeout"
)

// ProbeFile is one file asked about: the name asked, where it is, whether
// it is there (a file, not a folder).
type ProbeFile struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Present bool   `json:"present"`
}
