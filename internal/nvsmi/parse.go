// Package nvsmi is the one nvidia-smi reader: the local probe
// (internal/probe), the second PC's probe (internal/linkprobe over ssh or
// through `strata-vision-relay probe`) and the agent's GPU observation
// (internal/agent) all find nvidia-smi, run it and read its answer here.
//
// It finds nvidia-smi on PATH and where drivers put it (Candidates), runs a
// query with a deadline and a hard bound on the wait (Local: a hung
// nvidia-smi, even one stuck in the kernel that a kill cannot end, never
// holds the caller past the bound), reads its CSV per GPU line (Parse: good
// lines are kept when another fails; "[N/A]" memory is unknown, -1, never
// 0), tells a MIG-partitioned card from a whole one (ParseMIG), and names
// every failure (Error) with words a person can act on (Explain).
package nvsmi

import (
	"fmt"
	"strconv"
	"strings"
)

// The nvidia-smi queries. None needs quoting: the same words run under sh,
// cmd.exe and PowerShell, locally or as an ssh command ("nvidia-smi " + args).
const (
	// QueryArgs asks for eight fields per GPU: the six of BasicQueryArgs
	// plus compute capability and whether a display is active. Drivers
	// older than about R510 reject compute_cap.
	QueryArgs = "--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version,compute_cap,display_active --format=csv,noheader,nounits"
	// BasicQueryArgs is Strata's own query (six fields), the fallback for
	// drivers that reject the rich one.
	BasicQueryArgs = "--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version --format=csv,noheader,nounits"
	// MIGQueryArgs asks whether each card is split into MIG slices. It is a
	// query of its own, so that the GPU query's lines stay what every
	// companion and agent version reads; a driver that rejects it (older
	// than R450) has no MIG.
	MIGQueryArgs = "--query-gpu=index,mig.mode.current --format=csv,noheader,nounits"
)

// Query names, as results spell them.
const (
	QueryRich  = "rich"
	QueryBasic = "basic"
)

// MIG modes of a card (mig.mode.current).
const (
	MIGUnknown  = ""         // not asked, or the driver did not say
	MIGDisabled = "disabled" // a whole card ("Disabled", or "[N/A]": a card without MIG)
	MIGEnabled  = "enabled"  // split into MIG slices: CUDA gets one slice, never the whole card
)

// GPU is one nvidia-smi line: the one record of a GPU as nvidia-smi reports
// it (probe.GPU embeds it and adds the vendor and source). Memory figures
// are MiB, -1 when nvidia-smi did not know them ("[N/A]", "[Not
// Supported]": vGPUs, MIG, some laptops).
type GPU struct {
	// Index is nvidia-smi's index: PCI bus order, the order CUDA uses with
	// CUDA_DEVICE_ORDER=PCI_BUS_ID.
	Index    int
	Name     string
	TotalMiB int
	UsedMiB  int
	FreeMiB  int
	// Driver is the driver version ("581.57"), "" when unknown.
	Driver string
	// ComputeCap is the CUDA compute capability ("8.9"), "" when unknown.
	ComputeCap string
	// Display says whether a display is active on this GPU; nil when unknown.
	Display *bool
	// MIG is MIGEnabled, MIGDisabled or MIGUnknown.
	MIG string
}

// Partitioned says the card is split into MIG slices: a program gets one
// slice of its memory, not the whole card.
func (g GPU) Partitioned() bool { return g.MIG == MIGEnabled }

// Parse reads the CSV that QueryArgs or BasicQueryArgs print (8 or 6 fields
// a line; either is accepted on any line). It copes with CRLF, a BOM, extra
// spaces, "[N/A]" / "[Not Supported]" fields (-1 or ""), a header line and
// stray lines. It returns the GPUs read and the lines it skipped (error
// text among good lines, a GPU that "is lost", a repeated index); the error,
// an *Error, comes only when no GPU could be read, and names why.
func Parse(out []byte) (gpus []GPU, skipped []string, err error) {
	seen := map[int]bool{}
	for _, line := range lines(out) {
		low := strings.ToLower(line)
		if strings.HasPrefix(low, "index,") || strings.HasPrefix(low, "index ,") {
			continue
		}
		g, ok := parseLine(line)
		if !ok || seen[g.Index] {
			skipped = append(skipped, line)
			continue
		}
		seen[g.Index] = true
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, skipped, classify(skipped)
	}
	return gpus, skipped, nil
}

// lines splits nvidia-smi's output into trimmed, non-empty lines.
func lines(out []byte) []string {
	var ls []string
	for _, raw := range strings.Split(string(out), "\n") {
		l := strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(raw, "\r"), "\ufeff"))
		if l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// ParseMIG reads MIGQueryArgs' answer: the MIG mode by GPU index. Lines it
// cannot read are left out (their cards stay MIGUnknown).
func ParseMIG(out []byte) map[int]string {
	modes := map[int]string{}
	for _, l := range lines(out) {
		i, mode, ok := strings.Cut(l, ",")
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSpace(i))
		if err != nil || idx < 0 {
			continue
		}
		switch m := strings.ToLower(strings.TrimSpace(mode)); {
		case m == "enabled":
			modes[idx] = MIGEnabled
		case m == "disabled", m == "[n/a]", m == "n/a", m == "[not supported]":
			// "[N/A]": a card that cannot be split is a whole card.
			modes[idx] = MIGDisabled
		}
	}
	return modes
}

// classify names the failure from the lines nvidia-smi printed.
func classify(lines []string) *Error {
	if len(lines) == 0 {
		return &Error{Kind: Empty}
	}
	for _, l := range lines {
		low := strings.ToLower(l)
		switch {
		case strings.Contains(low, "is not a valid field"):
			return &Error{Kind: UnknownField, Detail: Clip(l, 200)}
		case strings.Contains(low, "couldn't communicate with the nvidia driver"),
			strings.Contains(low, "could not communicate with the nvidia driver"):
			return &Error{Kind: Driver, Detail: Clip(l, 200)}
		case strings.Contains(low, "driver/library version mismatch"):
			return &Error{Kind: Mismatch, Detail: Clip(l, 200)}
		case strings.Contains(low, "failed to initialize nvml"):
			return &Error{Kind: NVML, Detail: Clip(l, 200)}
		case strings.Contains(low, "no devices were found"):
			return &Error{Kind: NoDevices, Detail: Clip(l, 200)}
		}
	}
	return &Error{Kind: Garbage, Detail: Clip(lines[0], 200)}
}

// parseLine reads one GPU line. A line is a GPU only if its index is a
// number and every memory figure is a number or a bracketed/N/A marker;
// anything else (error text, garbage) is not.
func parseLine(line string) (GPU, bool) {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if len(f) < 6 {
		return GPU{}, false
	}
	// The rich form ends in a compute capability and a display flag. A GPU
	// name with commas (none known, but cheap to allow) keeps its middle.
	var cc string
	var disp *bool
	const tail = 4 // memory.total, memory.used, memory.free, driver_version
	if len(f) >= 8 && isCCField(f[len(f)-2]) && isDisplayField(f[len(f)-1]) {
		cc = parseCC(f[len(f)-2])
		disp = parseDisplay(f[len(f)-1])
		f = f[:len(f)-2]
	}
	idx, err := strconv.Atoi(f[0])
	if err != nil || idx < 0 || idx > 1<<16 {
		return GPU{}, false
	}
	name := strings.TrimSpace(strings.Join(f[1:len(f)-tail], ","))
	var m [3]int
	for i, s := range f[len(f)-tail : len(f)-1] {
		v, ok := parseMiB(s)
		if !ok {
			return GPU{}, false
		}
		m[i] = v
	}
	drv := f[len(f)-1]
	if !isVersion(drv) {
		if !isNA(drv) {
			return GPU{}, false
		}
		drv = ""
	}
	if isNA(name) {
		name = ""
	}
	return GPU{Index: idx, Name: name, TotalMiB: m[0], UsedMiB: m[1], FreeMiB: m[2],
		Driver: drv, ComputeCap: cc, Display: disp}, true
}

// isNA is nvidia-smi's way of saying "unknown": "[N/A]", "N/A",
// "[Not Supported]", "[Unknown Error]", "[GPU requires reset]"...
func isNA(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.EqualFold(s, "N/A") ||
		(strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"))
}

func parseMiB(s string) (int, bool) {
	if isNA(s) {
		return -1, true
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, "MiB"))
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 1<<30 {
		return 0, false
	}
	return v, true
}

func isVersion(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return s[0] != '.'
}

func isCCField(s string) bool { return isNA(s) || parseCC(s) != "" }

func parseCC(s string) string {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok {
		return ""
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 || a > 99 || b > 99 {
		return ""
	}
	return strconv.Itoa(a) + "." + strconv.Itoa(b)
}

func isDisplayField(s string) bool { return isNA(s) || parseDisplay(s) != nil }

func parseDisplay(s string) *bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "enabled", "yes", "on":
		t := true
		return &t
	case "disabled", "no", "off":
		f := false
		return &f
	}
	return nil
}

// Clip trims s to n bytes of valid UTF-8 for quoting in a message.
func Clip(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "?"))
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Format writes GPUs back in the rich CSV form (tests, stand-ins).
func Format(gpus []GPU) string {
	var b strings.Builder
	na := func(v int) string {
		if v < 0 {
			return "[N/A]"
		}
		return strconv.Itoa(v)
	}
	orNA := func(s string) string {
		if s == "" {
			return "[N/A]"
		}
		return s
	}
	for _, g := range gpus {
		disp := "[N/A]"
		if g.Display != nil {
			disp = map[bool]string{true: "Enabled", false: "Disabled"}[*g.Display]
		}
		fmt.Fprintf(&b, "%d, %s, %s, %s, %s, %s, %s, %s\n", g.Index, orNA(g.Name), na(g.TotalMiB), na(g.UsedMiB), na(g.FreeMiB),
			orNA(g.Driver), orNA(g.ComputeCap), disp)
	}
	return b.String()
}
