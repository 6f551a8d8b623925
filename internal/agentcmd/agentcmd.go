// Package agentcmd is the one definition of every command line the
// companion sends to the agent on a second PC: the picture session
// (`<agent> agent ...`), prepare's file session, the link probe's `probe`,
// `sink` and `source N`, `version`, `unpair`, the stop of a hung agent
// (`kill -KILL PID` / `taskkill /F /T /PID PID`), and the forced command
// pairing installs (`<agent> gate ...`).
//
// Three programs meet on these lines and all three use this package:
//   - the relay and prepare build them (Command.Argv, Command.Quote);
//   - the gate of an agent-only key splits the asked-for line (Split) and
//     parses it (Parse) exactly as it was built, then admits it or not by
//     policy (Policy.Admit): only the admission rules live in the gate;
//   - the agent parses its own arguments with the same parser (ParseArgs).
//
// So an option added here reaches all three at once, and one generated test
// (agentcmd_test.go) checks that every line the relay can build is admitted
// by the gate and parsed back unchanged by the agent.
//
// Arguments Strata passes that the relay does not know (--min-tokens,
// --flash-attn, whatever a later Strata adds) travel as data: one
// base64url word (EncoderArgsFlag), never as shell words or as options of
// the agent, so no value can carry shell syntax or smuggle an option in.
package agentcmd

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// Verb is what a command asks the agent to do.
type Verb string

const (
	VerbAgent   Verb = "agent"   // a picture session, or prepare's file session (no --encoder)
	VerbVersion Verb = "version" // the agent's version line
	VerbUnpair  Verb = "unpair"  // remove the gate's own authorized_keys lines
	VerbProbe   Verb = "probe"   // one JSON line about that PC
	VerbSink    Verb = "sink"    // the link probe's upload
	VerbSource  Verb = "source"  // the link probe's download of N bytes
	VerbKill    Verb = "kill"    // the stop of a hung agent (no program: kill / taskkill)
	VerbGate    Verb = "gate"    // the forced command of an agent-only key
)

// The agent's flags, one name each (the parser also takes -name and
// --name=value, as Go's flag package does).
const (
	FlagEncoder       = "encoder"
	FlagMmproj        = "mmproj"
	FlagModel         = "model"
	FlagGPU           = "gpu"
	FlagThreads       = "threads"
	FlagMaxTokens     = "max-tokens"
	FlagIdleStop      = "idle-stop"
	FlagCUDADevice    = "cuda-device"
	FlagEncoderArgs   = "encoder-args"
	FlagEncoderArg    = "encoder-arg" // an older relay's form, one per argument: read, never written
	FlagInstallSHA256 = "install-sha256"
	FlagDir           = "dir"
	FlagScratch       = "scratch"
	FlagFile          = "file"
	FlagAllow         = "allow"
	FlagKeys          = "keys"
)

// Limits on what a command carries. Generous for any real use; they keep a
// hostile line from growing the gate's or the agent's memory.
const (
	MaxEncoderArgs     = 32                     // arguments Strata passes on
	MaxEncoderArgBytes = 512                    // each
	MaxCount           = 1 << 20                // threads, tokens, idle seconds
	MaxCUDADevice      = 63                     // nvidia-smi indexes
	MaxFiles           = 64                     // probe --file
	MaxSourceBytes     = framing.MaxSourceBytes // the link probe's download (1 GiB)
	MaxPID             = 1<<31 - 1
)

// EncoderOwned are the encoder options the agent sets itself from its own
// flags: never passed on among Strata's other arguments (the relay reads
// them from Strata's line and leaves them; the gate refuses them in
// --encoder-args, where a file option would name a file outside the
// agent's folder).
var EncoderOwned = []string{"--mmproj", "--model", "--gpu", "--threads", "--max-tokens"}

// IsEncoderOwned: arg (any of -x, --x, --x=v) is one of EncoderOwned.
func IsEncoderOwned(arg string) bool {
	name, _, _ := strings.Cut(arg, "=")
	name = "--" + strings.TrimLeft(name, "-")
	for _, o := range EncoderOwned {
		if name == o {
			return true
		}
	}
	return false
}

// Agent is `<agent> agent ...`: the encoder and its settings for a picture
// session, or (Encoder "") prepare's file session.
type Agent struct {
	Encoder   string // strata-vision on the second PC
	Mmproj    string
	Model     string // the vocabulary stub
	GPU       bool
	Threads   int
	MaxTokens int
	IdleStopS int
	// CUDADevice is the GPU the encoder runs on, by nvidia-smi index in PCI
	// bus order (nil: the first).
	CUDADevice *int
	// EncoderArgs are Strata's arguments the relay passes on to the
	// encoder (data: one base64url word on the line).
	EncoderArgs []string
	// InstallSHA256: the programs this session may install (prepare).
	InstallSHA256 []string
	// Dir and Scratch move the agent's folders: for tests and hand runs
	// only; the gate refuses both.
	Dir, Scratch string
}

// Probe is `<agent> probe [--encoder PATH] [--file NAME]...`.
type Probe struct {
	Encoder string
	Files   []string
}

// Gate is the forced command pairing installs:
// `<agent> gate [--allow SUMS] [--encoder ABSPATH] [--keys FILE]`.
type Gate struct {
	Allow   []string // sha256 sums of the programs prepare may install
	Encoder string   // an encoder outside the agent's folder, absolute
	Keys    string   // the authorized_keys file pairing wrote
}

// Command is one command line for the agent's PC.
type Command struct {
	// Program is the agent's path on the second PC (empty for VerbKill).
	Program string
	Verb    Verb
	Agent   Agent // VerbAgent
	Probe   Probe // VerbProbe
	Bytes   int64 // VerbSource
	PID     int   // VerbKill
	Gate    Gate  // VerbGate
}

// Argv is c as a program's argument vector for a second PC of goos
// ("windows", else POSIX), program first.
func (c Command) Argv(goos string) []string {
	if c.Verb == VerbKill {
		if remotecmd.Windows(goos) {
			return []string{"taskkill", "/F", "/T", "/PID", strconv.Itoa(c.PID)}
		}
		return []string{"kill", "-KILL", strconv.Itoa(c.PID)}
	}
	return append([]string{c.Program}, c.Args()...)
}

// Args is c's arguments after the program: the verb and its flags (what
// the agent's own main reads; ParseArgs reads it back).
func (c Command) Args() []string {
	out := []string{string(c.Verb)}
	switch c.Verb {
	case VerbAgent:
		a := c.Agent
		str := func(name, v string) {
			if v != "" {
				out = append(out, "--"+name, v)
			}
		}
		num := func(name string, v int) {
			if v > 0 {
				out = append(out, "--"+name, strconv.Itoa(v))
			}
		}
		str(FlagEncoder, a.Encoder)
		str(FlagMmproj, a.Mmproj)
		str(FlagModel, a.Model)
		if a.GPU {
			out = append(out, "--"+FlagGPU)
		}
		num(FlagThreads, a.Threads)
		num(FlagMaxTokens, a.MaxTokens)
		num(FlagIdleStop, a.IdleStopS)
		if a.CUDADevice != nil {
			out = append(out, "--"+FlagCUDADevice, strconv.Itoa(*a.CUDADevice))
		}
		if len(a.EncoderArgs) > 0 {
			out = append(out, "--"+FlagEncoderArgs, EncodeArgs(a.EncoderArgs))
		}
		if len(a.InstallSHA256) > 0 {
			out = append(out, "--"+FlagInstallSHA256, strings.Join(a.InstallSHA256, ","))
		}
		str(FlagDir, a.Dir)
		str(FlagScratch, a.Scratch)
	case VerbProbe:
		if c.Probe.Encoder != "" {
			out = append(out, "--"+FlagEncoder, c.Probe.Encoder)
		}
		for _, f := range c.Probe.Files {
			out = append(out, "--"+FlagFile, f)
		}
	case VerbSource:
		out = append(out, strconv.FormatInt(c.Bytes, 10))
	case VerbGate:
		g := c.Gate
		if len(g.Allow) > 0 {
			out = append(out, "--"+FlagAllow, strings.Join(g.Allow, ","))
		}
		if g.Encoder != "" {
			out = append(out, "--"+FlagEncoder, g.Encoder)
		}
		if g.Keys != "" {
			out = append(out, "--"+FlagKeys, g.Keys)
		}
	}
	return out
}

// Quote is c as one ssh command string for goos's login shell (sh, or
// cmd.exe on Windows): what the relay, prepare and the probe send.
func (c Command) Quote(goos string) (string, error) {
	return remotecmd.Quote(goos, c.Argv(goos))
}

// EncodeArgs is args as one base64url word (no padding) of their JSON list:
// the form Strata's arguments travel in. It starts with "W" (the "[" of the
// list), never with "-", and holds no character any shell acts on.
func EncodeArgs(args []string) string {
	b, _ := json.Marshal(args)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeArgs reads EncodeArgs' word back, within the limits.
func DecodeArgs(s string) ([]string, error) {
	if len(s) > base64.RawURLEncoding.EncodedLen(MaxEncoderArgs*(MaxEncoderArgBytes*6+3)+2) {
		return nil, errors.New("--encoder-args is too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("--encoder-args is not the relay's encoding: %v", err)
	}
	var args []string
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, fmt.Errorf("--encoder-args is not a list of arguments: %v", err)
	}
	for _, a := range args {
		if err := checkEncoderArg(a); err != nil {
			return nil, err
		}
	}
	if len(args) > MaxEncoderArgs {
		return nil, fmt.Errorf("--encoder-args holds %d arguments; at most %d are passed on", len(args), MaxEncoderArgs)
	}
	return args, nil
}

// checkEncoderArg: one argument to pass on is plain text of bounded size.
func checkEncoderArg(a string) error {
	switch {
	case len(a) > MaxEncoderArgBytes:
		return fmt.Errorf("an encoder argument is longer than %d bytes", MaxEncoderArgBytes)
	case !utf8.ValidString(a):
		return fmt.Errorf("the encoder argument %q is not UTF-8 text", a)
	case strings.ContainsFunc(a, unicode.IsControl):
		return fmt.Errorf("the encoder argument %q holds a control character", a)
	}
	return nil
}

// ParseArgs reads the agent's own arguments (after its program): a verb and
// its flags. It refuses what Args never writes, so the agent and the gate
// read exactly the lines the relay builds.
func ParseArgs(args []string) (Command, error) {
	if len(args) == 0 {
		return Command{}, errors.New("no command (agent, probe, sink, source N, version, unpair or gate)")
	}
	c := Command{Verb: Verb(args[0])}
	rest := args[1:]
	switch c.Verb {
	case VerbVersion, VerbUnpair, VerbSink:
		if len(rest) != 0 {
			return c, fmt.Errorf("%s takes no arguments", c.Verb)
		}
	case VerbSource:
		if len(rest) != 1 {
			return c, errors.New("source: give one count of bytes")
		}
		n, err := strconv.ParseInt(rest[0], 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != rest[0] {
			return c, fmt.Errorf("source: %q is not a count of bytes", rest[0])
		}
		if n > MaxSourceBytes {
			return c, fmt.Errorf("source: %d bytes is more than the %d (1 GiB) a link probe sends", n, int64(MaxSourceBytes))
		}
		c.Bytes = n
	case VerbAgent:
		a, err := parseAgent(rest)
		if err != nil {
			return c, err
		}
		c.Agent = a
	case VerbProbe:
		p, err := parseProbe(rest)
		if err != nil {
			return c, err
		}
		c.Probe = p
	case VerbGate:
		g, err := parseGate(rest)
		if err != nil {
			return c, err
		}
		c.Gate = g
	default:
		return c, fmt.Errorf("%q is not one of the agent's commands", args[0])
	}
	return c, nil
}

// Parse reads a whole argument vector (as Split gives it): the stop of a
// hung agent, or the agent's program and its arguments.
func Parse(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, errors.New("a login shell is not allowed")
	}
	switch {
	case argv[0] == "kill" && len(argv) == 3 && argv[1] == "-KILL":
		return parseKill(argv[2])
	case strings.EqualFold(argv[0], "taskkill") && len(argv) == 5 && strings.EqualFold(argv[1], "/F") && strings.EqualFold(argv[2], "/T") && strings.EqualFold(argv[3], "/PID"):
		return parseKill(argv[4])
	case argv[0] == "kill" || strings.EqualFold(argv[0], "taskkill"):
		return Command{}, errors.New("only `kill -KILL PID` or `taskkill /F /T /PID PID` stops a hung agent")
	}
	c, err := ParseArgs(argv[1:])
	c.Program = argv[0]
	return c, err
}

func parseKill(s string) (Command, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || pid > MaxPID || strconv.Itoa(pid) != s {
		return Command{}, fmt.Errorf("%q is not a process id", s)
	}
	return Command{Verb: VerbKill, PID: pid}, nil
}

// flags walks --name value / --name=value / -name pairs.
type flags struct {
	args []string
	i    int
}

// next returns the next flag's name and whether it had "=value".
func (f *flags) next() (name, val string, hasVal bool, err error) {
	a := f.args[f.i]
	if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
		return "", "", false, fmt.Errorf("unexpected argument %q", a)
	}
	name, val, hasVal = strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
	return name, val, hasVal, nil
}

// value is the flag's value: after "=", else the next argument.
func (f *flags) value(name, val string, hasVal bool) (string, error) {
	if hasVal {
		return val, nil
	}
	if f.i+1 >= len(f.args) {
		return "", fmt.Errorf("--%s needs a value", name)
	}
	f.i++
	return f.args[f.i], nil
}

func count(name, v string, max int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max || strconv.Itoa(n) != v {
		return 0, fmt.Errorf("--%s %q is not a count (0 to %d)", name, v, max)
	}
	return n, nil
}

func parseAgent(args []string) (Agent, error) {
	var a Agent
	seen := map[string]bool{}
	f := &flags{args: args}
	for ; f.i < len(args); f.i++ {
		name, val, hasVal, err := f.next()
		if err != nil {
			return a, err
		}
		if seen[name] && name != FlagEncoderArg {
			return a, fmt.Errorf("--%s is given twice", name)
		}
		seen[name] = true
		if name == FlagGPU {
			if hasVal {
				return a, errors.New("--gpu takes no value")
			}
			a.GPU = true
			continue
		}
		v, err := f.value(name, val, hasVal)
		if err != nil {
			return a, err
		}
		switch name {
		case FlagEncoder, FlagMmproj, FlagModel, FlagDir, FlagScratch:
			if v == "" {
				return a, fmt.Errorf("--%s needs a value", name)
			}
			*map[string]*string{FlagEncoder: &a.Encoder, FlagMmproj: &a.Mmproj, FlagModel: &a.Model, FlagDir: &a.Dir, FlagScratch: &a.Scratch}[name] = v
		case FlagThreads, FlagMaxTokens, FlagIdleStop:
			n, err := count(name, v, MaxCount)
			if err != nil {
				return a, err
			}
			*map[string]*int{FlagThreads: &a.Threads, FlagMaxTokens: &a.MaxTokens, FlagIdleStop: &a.IdleStopS}[name] = n
		case FlagCUDADevice:
			n, err := count(name, v, MaxCUDADevice)
			if err != nil {
				return a, err
			}
			a.CUDADevice = &n
		case FlagEncoderArgs:
			xs, err := DecodeArgs(v)
			if err != nil {
				return a, err
			}
			a.EncoderArgs = append(a.EncoderArgs, xs...)
		case FlagEncoderArg:
			if err := checkEncoderArg(v); err != nil {
				return a, err
			}
			a.EncoderArgs = append(a.EncoderArgs, v)
		case FlagInstallSHA256:
			for _, s := range strings.Split(v, ",") {
				if !isHexSum(s) {
					return a, fmt.Errorf("--install-sha256 %q is not a list of sha256 sums", v)
				}
				a.InstallSHA256 = append(a.InstallSHA256, s)
			}
		default:
			return a, fmt.Errorf("--%s is not one of the agent's options", name)
		}
	}
	if len(a.EncoderArgs) > MaxEncoderArgs {
		return a, fmt.Errorf("%d encoder arguments; at most %d are passed on", len(a.EncoderArgs), MaxEncoderArgs)
	}
	return a, nil
}

// isHexSum: s is a checksum in hex (a sha256 is 64 digits; the gate
// compares against the sums pinned at pairing, so only the form is checked
// here).
func isHexSum(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func parseProbe(args []string) (Probe, error) {
	var p Probe
	f := &flags{args: args}
	for ; f.i < len(args); f.i++ {
		name, val, hasVal, err := f.next()
		if err != nil {
			return p, fmt.Errorf("probe: %v (it takes --encoder PATH and --file NAME)", err)
		}
		if name != FlagEncoder && name != FlagFile {
			return p, fmt.Errorf("probe: unexpected argument %q (it takes --encoder PATH and --file NAME)", args[f.i])
		}
		v, err := f.value(name, val, hasVal)
		if err != nil || v == "" {
			return p, fmt.Errorf("probe: --%s needs a value", name)
		}
		if name == FlagEncoder {
			if p.Encoder != "" {
				return p, errors.New("probe: --encoder is given twice")
			}
			p.Encoder = v
			continue
		}
		if len(p.Files) >= MaxFiles {
			return p, fmt.Errorf("probe: at most %d --file names", MaxFiles)
		}
		p.Files = append(p.Files, v)
	}
	return p, nil
}

func parseGate(args []string) (Gate, error) {
	var g Gate
	f := &flags{args: args}
	for ; f.i < len(args); f.i++ {
		name, val, hasVal, err := f.next()
		if err != nil {
			return g, err
		}
		v, err := f.value(name, val, hasVal)
		if err != nil {
			return g, err
		}
		switch name {
		case FlagAllow:
			for _, s := range strings.Split(v, ",") {
				if s != "" {
					g.Allow = append(g.Allow, s)
				}
			}
		case FlagEncoder:
			g.Encoder = v
		case FlagKeys:
			g.Keys = v
		default:
			return g, fmt.Errorf("unknown argument %q", args[f.i])
		}
	}
	return g, nil
}
