package nvsmi

// Kind says what went wrong with nvidia-smi.
type Kind string

// The ways nvidia-smi fails that this package tells apart.
const (
	NotFound      Kind = "not-found"      // no nvidia-smi anywhere
	StartFailed   Kind = "start-failed"   // the file is there but would not run
	Timeout       Kind = "timeout"        // it did not answer in time and was killed
	Driver        Kind = "driver"         // "couldn't communicate with the NVIDIA driver"
	Mismatch      Kind = "mismatch"       // "Driver/library version mismatch": updated, not restarted
	NVML          Kind = "nvml"           // another "Failed to initialize NVML: ..."
	NoDevices     Kind = "no-devices"     // "No devices were found"
	UnknownField  Kind = "unknown-field"  // an old driver rejected a field of the rich query
	Empty         Kind = "empty"          // no output at all
	Garbage       Kind = "garbage"        // output this package cannot read
	RunnerFailure Kind = "runner-failure" // the runner (e.g. ssh) failed before nvidia-smi answered
)

// Severities, as internal/probe's findings spell them.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// Error is a failed nvidia-smi run, classified. Explain turns it into words
// for a person.
type Error struct {
	Kind Kind
	// Detail is the most telling line nvidia-smi printed (or the runner's
	// error), trimmed; it is quoted to the user.
	Detail string
	// Where names the binary or host, for the message ("" is fine).
	Where string
}

func (e *Error) Error() string {
	s := "nvidia-smi: " + string(e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Explain says how bad it is, what happened and what to do.
func (e *Error) Explain() (severity, what, fix string) {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	q := ""
	if e.Detail != "" {
		q = ": \"" + e.Detail + "\""
	}
	switch e.Kind {
	case NotFound:
		return SeverityInfo,
			"nvidia-smi was not found" + where + ", so no NVIDIA GPU can be used",
			"if this PC has an NVIDIA GPU, install the NVIDIA driver (580 or newer; nvidia-smi comes with it); without one, pictures can be read on the CPU or on a second PC"
	case StartFailed:
		return SeverityError,
			"nvidia-smi" + where + " could not be started" + q,
			"reinstall the NVIDIA driver (580 or newer), which puts a working nvidia-smi in place"
	case Timeout:
		return SeverityError,
			"nvidia-smi" + where + " did not answer in time and was stopped" + q,
			"the NVIDIA driver seems stuck: restart the PC; if it keeps happening, reinstall the driver (580 or newer)"
	case Driver:
		return SeverityError,
			"nvidia-smi" + where + " could not talk to the NVIDIA driver" + q,
			"the driver is not loaded: restart the PC; if that does not help, reinstall the NVIDIA driver (580 or newer). On Linux, check that the nvidia kernel module loads (`lsmod | grep nvidia`; Secure Boot can block it)"
	case Mismatch:
		return SeverityError,
			"the NVIDIA driver was updated but the old one is still running" + where + q,
			"restart the PC so the new driver loads"
	case NVML:
		return SeverityError,
			"nvidia-smi" + where + " could not start the NVIDIA management library" + q,
			"restart the PC; if it persists, reinstall the NVIDIA driver (580 or newer). In a container, start it with GPU access (e.g. --gpus all)"
	case NoDevices:
		return SeverityError,
			"nvidia-smi" + where + " found no NVIDIA GPU" + q,
			"if this PC has one, check that it is enabled (Device Manager, BIOS) and seated, then restart; otherwise pictures can be read on the CPU or a second PC"
	case UnknownField:
		return SeverityWarning,
			"this NVIDIA driver is too old to report compute capability and the display flag" + where + q,
			"update the NVIDIA driver to 580 or newer (Strata needs it anyway); the basic facts were read instead"
	case Empty:
		return SeverityError,
			"nvidia-smi" + where + " printed nothing" + q,
			"run nvidia-smi yourself to see what it says; reinstalling the NVIDIA driver usually repairs it"
	case RunnerFailure:
		return SeverityError,
			"nvidia-smi could not be run" + where + q,
			"try again; when probing a second PC, check that it is on and reachable"
	default: // Garbage
		return SeverityError,
			"nvidia-smi" + where + " printed something this probe cannot read" + q,
			"run nvidia-smi yourself to see what it says; reinstalling the NVIDIA driver usually repairs it"
	}
}

// SkippedLine says what a line that was not a GPU, among lines that were,
// means (severity warning).
func SkippedLine(line string) (what, fix string) {
	return "nvidia-smi printed a line this probe could not read as a GPU: \"" + Clip(line, 200) + "\"",
		"if a GPU is missing from the list, restart the PC; a GPU that \"is lost\" needs a restart or reseating"
}

// MIGWords says what a MIG-partitioned card means for the encoder
// (severity warning).
func MIGWords(g GPU, where string) (what, fix string) {
	if where != "" {
		where = " " + where
	}
	name := g.Name
	if name == "" {
		name = "NVIDIA GPU"
	}
	return "GPU " + itoa(g.Index) + " (" + name + ")" + where + " is split into MIG slices: a program gets one slice of its memory, not the whole card, so its total is not what the encoder or Strata can use",
		"use another GPU, or ask whoever manages this GPU for a MIG slice with room for the encoder (about 1.4 GB); turning MIG off (nvidia-smi -mig 0, as an administrator) gives the whole card back"
}
