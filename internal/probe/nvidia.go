package probe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The nvidia-smi queries. Neither needs quoting: the same words run under sh,
// cmd.exe and PowerShell, locally or as an ssh command ("nvidia-smi " + args).
const (
	// NvidiaSMIQueryArgs asks for eight fields per GPU: the six of
	// NvidiaSMIBasicQueryArgs plus compute capability and whether a display
	// is active. Drivers older than about R510 reject compute_cap.
	NvidiaSMIQueryArgs = "--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version,compute_cap,display_active --format=csv,noheader,nounits"
	// NvidiaSMIBasicQueryArgs is Strata's own query (six fields), the
	// fallback for drivers that reject the rich one.
	NvidiaSMIBasicQueryArgs = "--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version --format=csv,noheader,nounits"
)

// Query names, as Report.NvidiaQuery spells them.
const (
	QueryRich  = "rich"
	QueryBasic = "basic"
)

// SMIErrorKind says what went wrong with nvidia-smi.
type SMIErrorKind string

// The ways nvidia-smi fails that this package tells apart.
const (
	SMINotFound      SMIErrorKind = "not-found"      // no nvidia-smi anywhere
	SMIStartFailed   SMIErrorKind = "start-failed"   // the file is there but would not run
	SMITimeout       SMIErrorKind = "timeout"        // it did not answer in time and was killed
	SMIDriver        SMIErrorKind = "driver"         // "couldn't communicate with the NVIDIA driver"
	SMIMismatch      SMIErrorKind = "mismatch"       // "Driver/library version mismatch": updated, not restarted
	SMINVML          SMIErrorKind = "nvml"           // another "Failed to initialize NVML: ..."
	SMINoDevices     SMIErrorKind = "no-devices"     // "No devices were found"
	SMIUnknownField  SMIErrorKind = "unknown-field"  // an old driver rejected a field of the rich query
	SMIEmpty         SMIErrorKind = "empty"          // no output at all
	SMIGarbage       SMIErrorKind = "garbage"        // output this package cannot read
	SMIRunnerFailure SMIErrorKind = "runner-failure" // the runner (e.g. ssh) failed before nvidia-smi answered
)

// SMIError is a failed nvidia-smi run, classified. Finding turns it into
// words for a person.
type SMIError struct {
	Kind SMIErrorKind
	// Detail is the most telling line nvidia-smi printed (or the runner's
	// error), trimmed; it is quoted to the user.
	Detail string
	// Where names the binary or host, for the message ("" is fine).
	Where string
}

func (e *SMIError) Error() string {
	s := "nvidia-smi: " + string(e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Finding says what happened and what to do.
func (e *SMIError) Finding() Finding {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	q := func() string {
		if e.Detail == "" {
			return ""
		}
		return ": \"" + e.Detail + "\""
	}
	switch e.Kind {
	case SMINotFound:
		return Finding{SeverityInfo,
			"nvidia-smi was not found" + where + ", so no NVIDIA GPU can be used",
			"if this PC has an NVIDIA GPU, install the NVIDIA driver (580 or newer; nvidia-smi comes with it); without one, pictures can be read on the CPU or on a second PC"}
	case SMIStartFailed:
		return Finding{SeverityError,
			"nvidia-smi" + where + " could not be started" + q(),
			"reinstall the NVIDIA driver (580 or newer), which puts a working nvidia-smi in place"}
	case SMITimeout:
		return Finding{SeverityError,
			"nvidia-smi" + where + " did not answer in time and was stopped" + q(),
			"the NVIDIA driver seems stuck: restart the PC; if it keeps happening, reinstall the driver (580 or newer)"}
	case SMIDriver:
		return Finding{SeverityError,
			"nvidia-smi" + where + " could not talk to the NVIDIA driver" + q(),
			"the driver is not loaded: restart the PC; if that does not help, reinstall the NVIDIA driver (580 or newer). On Linux, check that the nvidia kernel module loads (`lsmod | grep nvidia`; Secure Boot can block it)"}
	case SMIMismatch:
		return Finding{SeverityError,
			"the NVIDIA driver was updated but the old one is still running" + where + q(),
			"restart the PC so the new driver loads"}
	case SMINVML:
		return Finding{SeverityError,
			"nvidia-smi" + where + " could not start the NVIDIA management library" + q(),
			"restart the PC; if it persists, reinstall the NVIDIA driver (580 or newer). In a container, start it with GPU access (e.g. --gpus all)"}
	case SMINoDevices:
		return Finding{SeverityError,
			"nvidia-smi" + where + " found no NVIDIA GPU" + q(),
			"if this PC has one, check that it is enabled (Device Manager, BIOS) and seated, then restart; otherwise pictures can be read on the CPU or a second PC"}
	case SMIUnknownField:
		return Finding{SeverityWarning,
			"this NVIDIA driver is too old to report compute capability and the display flag" + where + q(),
			"update the NVIDIA driver to 580 or newer (Strata needs it anyway); the basic facts were read instead"}
	case SMIEmpty:
		return Finding{SeverityError,
			"nvidia-smi" + where + " printed nothing" + q(),
			"run nvidia-smi yourself to see what it says; reinstalling the NVIDIA driver usually repairs it"}
	case SMIRunnerFailure:
		return Finding{SeverityError,
			"nvidia-smi could not be run" + where + q(),
			"try again; when probing a second PC, check that it is on and reachable"}
	default: // SMIGarbage
		return Finding{SeverityError,
			"nvidia-smi" + where + " printed something this probe cannot read" + q(),
			"run nvidia-smi yourself to see what it says; reinstalling the NVIDIA driver usually repairs it"}
	}
}

// ParseNvidiaSMI reads the CSV that NvidiaSMIQueryArgs or
// NvidiaSMIBasicQueryArgs print (8 or 6 fields a line; either is accepted on
// any line). It copes with CRLF, extra spaces, "[N/A]" / "[Not Supported]"
// fields (they become -1 or ""), a header line, and stray lines. It returns
// an error, a *SMIError, only when no GPU could be read; otherwise the GPUs
// read, and a nil error even when some lines were skipped (use
// ParseNvidiaSMIDetailed to see those).
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	gpus, _, err := ParseNvidiaSMIDetailed(out)
	return gpus, err
}

// ParseNvidiaSMIDetailed is ParseNvidiaSMI plus findings for lines that
// were skipped while other lines gave GPUs (a GPU that "is lost", garbage).
func ParseNvidiaSMIDetailed(out []byte) ([]GPU, []Finding, error) {
	var gpus []GPU
	var skipped []string
	seen := map[int]bool{}
	for _, raw := range strings.Split(string(out), "\n") {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(raw, "\r"), "\ufeff"))
		if line == "" || strings.HasPrefix(strings.ToLower(line), "index,") || strings.HasPrefix(strings.ToLower(line), "index ,") {
			continue
		}
		g, ok := parseSMILine(line)
		if !ok || seen[g.Index] {
			skipped = append(skipped, line)
			continue
		}
		seen[g.Index] = true
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, nil, classifySMIOutput(skipped)
	}
	var findings []Finding
	for _, l := range skipped {
		findings = append(findings, Finding{SeverityWarning,
			"nvidia-smi printed a line this probe could not read as a GPU: \"" + clip(l, 200) + "\"",
			"if a GPU is missing from the list, restart the PC; a GPU that \"is lost\" needs a restart or reseating"})
	}
	return gpus, findings, nil
}

// classifySMIOutput names the failure from the lines nvidia-smi printed.
func classifySMIOutput(lines []string) *SMIError {
	if len(lines) == 0 {
		return &SMIError{Kind: SMIEmpty}
	}
	for _, l := range lines {
		low := strings.ToLower(l)
		switch {
		case strings.Contains(low, "is not a valid field"):
			return &SMIError{Kind: SMIUnknownField, Detail: clip(l, 200)}
		case strings.Contains(low, "couldn't communicate with the nvidia driver"),
			strings.Contains(low, "could not communicate with the nvidia driver"):
			return &SMIError{Kind: SMIDriver, Detail: clip(l, 200)}
		case strings.Contains(low, "driver/library version mismatch"):
			return &SMIError{Kind: SMIMismatch, Detail: clip(l, 200)}
		case strings.Contains(low, "failed to initialize nvml"):
			return &SMIError{Kind: SMINVML, Detail: clip(l, 200)}
		case strings.Contains(low, "no devices were found"):
			return &SMIError{Kind: SMINoDevices, Detail: clip(l, 200)}
		}
	}
	return &SMIError{Kind: SMIGarbage, Detail: clip(lines[0], 200)}
}

// parseSMILine reads one GPU line. A line is a GPU only if its index is a
// number and every memory figure is a number or a bracketed/N/A marker;
// anything else (error text, garbage) is not.
func parseSMILine(line string) (GPU, bool) {
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
	tail := 4 // memory.total, memory.used, memory.free, driver_version
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
	mem := f[len(f)-tail : len(f)-1]
	var m [3]int
	for i, s := range mem {
		v, ok := parseMiB(s)
		if !ok {
			return GPU{}, false
		}
		m[i] = v
	}
	drv := f[len(f)-1]
	if isNA(drv) || !isVersion(drv) {
		if !isNA(drv) {
			return GPU{}, false
		}
		drv = ""
	}
	if isNA(name) {
		name = ""
	}
	return GPU{Index: idx, Vendor: VendorNVIDIA, Name: name,
		TotalMiB: m[0], UsedMiB: m[1], FreeMiB: m[2],
		Driver: drv, ComputeCap: cc, Display: disp, Source: SourceNvidiaSMI}, true
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

func clip(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "?"))
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Runner runs nvidia-smi with args and returns everything it printed (stdout
// and stderr together: errors come on either). err is the run's failure (an
// exit status, a timeout: wrap context.DeadlineExceeded, a missing program:
// wrap exec.ErrNotFound); output that holds GPUs wins over err.
type Runner func(ctx context.Context, args []string) (out []byte, err error)

// QueryNvidia runs the rich query through run and, when the driver rejects
// its extra fields, the basic one. It returns the GPUs, which query gave
// them (QueryRich, QueryBasic, or ""), and findings for what went wrong.
// where names the binary or host in messages. The second-PC probe calls it
// with an ssh runner.
func QueryNvidia(ctx context.Context, run Runner, where string) (gpus []GPU, query string, problems []Finding) {
	gpus, query, problems, _ = queryNvidia(ctx, run, where)
	return gpus, query, problems
}

// queryNvidia is QueryNvidia that also says how it failed ("" when it did not).
func queryNvidia(ctx context.Context, run Runner, where string) ([]GPU, string, []Finding, SMIErrorKind) {
	gpus, problems, err := queryOnce(ctx, run, NvidiaSMIQueryArgs)
	if err == nil {
		return gpus, QueryRich, problems, ""
	}
	if err.Kind != SMIUnknownField {
		err.Where = where
		return nil, "", []Finding{err.Finding()}, err.Kind
	}
	fallback := err
	fallback.Where = where
	gpus, problems, err = queryOnce(ctx, run, NvidiaSMIBasicQueryArgs)
	if err != nil {
		err.Where = where
		return nil, "", []Finding{err.Finding()}, err.Kind
	}
	return gpus, QueryBasic, append([]Finding{fallback.Finding()}, problems...), ""
}

func queryOnce(ctx context.Context, run Runner, args string) ([]GPU, []Finding, *SMIError) {
	out, runErr := run(ctx, strings.Fields(args))
	gpus, probs, err := ParseNvidiaSMIDetailed(out)
	if err == nil {
		return gpus, probs, nil
	}
	var se *SMIError
	errors.As(err, &se)
	if runErr != nil {
		switch {
		case errors.Is(runErr, context.Canceled):
			return nil, nil, &SMIError{Kind: SMIRunnerFailure, Detail: runErr.Error()}
		case errors.Is(runErr, context.DeadlineExceeded):
			return nil, nil, &SMIError{Kind: SMITimeout, Detail: runErr.Error()}
		case errors.Is(runErr, errNotFound):
			return nil, nil, &SMIError{Kind: SMINotFound}
		case errors.Is(runErr, errStart):
			return nil, nil, &SMIError{Kind: SMIStartFailed, Detail: runErr.Error()}
		}
		if se.Kind == SMIEmpty {
			// Nothing printed: the run's own error is the best we have.
			se.Detail = runErr.Error()
		}
	}
	return nil, nil, se
}

// Sentinels a Runner may wrap.
var (
	errNotFound = errors.New("not found")
	errStart    = errors.New("could not be started")
)

// ErrNvidiaSMINotFound and ErrNvidiaSMIStart let a Runner say "no nvidia-smi"
// and "it would not start" (wrap them with %w).
var (
	ErrNvidiaSMINotFound = errNotFound
	ErrNvidiaSMIStart    = errStart
)

// FormatNvidiaSMI writes GPUs back in the rich CSV form (tests, fakes).
func FormatNvidiaSMI(gpus []GPU) string {
	var b strings.Builder
	na := func(v int) string {
		if v < 0 {
			return "[N/A]"
		}
		return strconv.Itoa(v)
	}
	for _, g := range gpus {
		cc, disp, drv, name := g.ComputeCap, "[N/A]", g.Driver, g.Name
		if cc == "" {
			cc = "[N/A]"
		}
		if drv == "" {
			drv = "[N/A]"
		}
		if name == "" {
			name = "[N/A]"
		}
		if g.Display != nil {
			disp = map[bool]string{true: "Enabled", false: "Disabled"}[*g.Display]
		}
		fmt.Fprintf(&b, "%d, %s, %s, %s, %s, %s, %s, %s\n", g.Index, name, na(g.TotalMiB), na(g.UsedMiB), na(g.FreeMiB), drv, cc, disp)
	}
	return b.String()
}
