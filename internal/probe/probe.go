// Package probe finds out what this PC has for Strata: its GPUs (NVIDIA through
// nvidia-smi, AMD through Linux sysfs, any vendor's VRAM from the Windows
// display-class registry), its CPU and RAM; it checks Strata's requirements and
// recommends where the image encoder should run, with expected figures.
//
// Nothing here panics or fails a caller on a broken machine: every failure
// (no driver, a hung nvidia-smi, garbage output) becomes a Finding in plain
// words with what to do.
package probe

import (
	"context"
	"encoding/json"
	"os/exec"
	"runtime"
	"time"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// Vendors, as GPU.Vendor spells them.
const (
	VendorNVIDIA = "NVIDIA"
	VendorAMD    = "AMD"
	VendorIntel  = "Intel"
	VendorOther  = "other"
)

// Sources, as GPU.Source spells them.
const (
	SourceNvidiaSMI = "nvidia-smi"
	SourceSysfs     = "sysfs"
	SourceRegistry  = "registry"
)

// GPU is one graphics card: nvidia-smi's record of it (nvsmi.GPU, for an
// NVIDIA card), with the vendor and where the facts came from. For a card
// nvidia-smi did not report (sysfs, the registry) the same record carries
// what the OS told: Index is then the order this probe found the cards in
// (for NVIDIA cards it is nvidia-smi's index: PCI bus order, the numbers
// Strata's `gpu` and `vision.cuda_device` use), memory figures are MiB and
// -1 when the OS or driver did not tell (nvidia-smi's "[N/A]", a registry
// without the value). In JSON an unknown figure is null (MarshalJSON).
type GPU struct {
	nvsmi.GPU
	Vendor string
	// Source is where the facts came from: SourceNvidiaSMI, SourceSysfs, SourceRegistry.
	Source string
}

// Finding is one problem or warning, in words a person can act on.
type Finding struct {
	// Severity is SeverityError (a part of the probe failed or a requirement
	// is not met so that something cannot work), SeverityWarning (works, but
	// not as well as it could), or SeverityInfo.
	Severity string `json:"severity"`
	What     string `json:"what"`
	Fix      string `json:"fix,omitempty"`
}

// Severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// CPU is the processor. Zero values mean unknown.
type CPU struct {
	Model   string `json:"model"`
	Cores   int    `json:"cores"`   // physical cores
	Threads int    `json:"threads"` // logical processors
}

// RAM is the system memory in MiB; -1 means unknown.
type RAM struct {
	TotalMiB int `json:"total_mib"`
	// FreeMiB is what programs can still get without swapping (Linux
	// MemAvailable, Windows ullAvailPhys).
	FreeMiB int `json:"free_mib"`
}

// Report is what Probe found.
type Report struct {
	OS   string `json:"os"`   // runtime.GOOS
	Arch string `json:"arch"` // runtime.GOARCH
	GPUs []GPU  `json:"gpus"`
	// NvidiaSMI is the nvidia-smi binary that answered (or was tried last);
	// "" when none was found.
	NvidiaSMI string `json:"nvidia_smi"`
	// NvidiaQuery is "rich" (with compute capability and display), "basic"
	// (an older driver that rejected those fields), or "" when nvidia-smi
	// gave no GPUs.
	NvidiaQuery string    `json:"nvidia_query"`
	CPU         CPU       `json:"cpu"`
	RAM         RAM       `json:"ram"`
	Problems    []Finding `json:"problems"`
	// Duration is how long the probe took.
	Duration time.Duration `json:"-"`
}

// Options changes where Probe looks; the zero value probes the real machine.
type Options struct {
	// NvidiaSMIPath, when set, is the only nvidia-smi tried.
	NvidiaSMIPath string
	// LookPath finds a program on PATH; nil means exec.LookPath.
	LookPath func(file string) (string, error)
	// SearchPaths are the places drivers put nvidia-smi, tried after PATH;
	// nil means the usual ones (DefaultNvidiaSMIPaths), an empty non-nil
	// slice means none.
	SearchPaths []string
	// SysfsRoot replaces "/sys" (tests); ProcRoot replaces "/proc".
	SysfsRoot string
	ProcRoot  string
	// Timeout bounds each nvidia-smi run; 0 means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds one nvidia-smi run. A healthy one answers in well
// under a second; a driver in trouble can hang it for minutes.
const DefaultTimeout = 10 * time.Second

func (o Options) withDefaults() Options {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.SearchPaths == nil {
		o.SearchPaths = DefaultNvidiaSMIPaths()
	}
	if o.SysfsRoot == "" {
		o.SysfsRoot = "/sys"
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Probe looks at this PC. It always returns a report; what failed is in
// Problems.
func Probe(ctx context.Context, opts Options) *Report {
	start := time.Now()
	o := opts.withDefaults()
	r := &Report{OS: runtime.GOOS, Arch: runtime.GOARCH, GPUs: []GPU{}, Problems: []Finding{}}

	nv := probeNvidia(ctx, o)
	r.NvidiaSMI = nv.path
	r.NvidiaQuery = nv.query
	r.GPUs = append(r.GPUs, nv.gpus...)
	r.Problems = append(r.Problems, nv.problems...)

	// Other vendors from the OS (sysfs, registry). An NVIDIA card the OS
	// lists while nvidia-smi gave nothing means a driver problem worth saying.
	others, probs := probeOSGPUs(o)
	r.Problems = append(r.Problems, probs...)
	r.GPUs = mergeOSGPUs(r.GPUs, others, nv, &r.Problems)

	r.CPU, r.RAM, probs = probeCPURAM(ctx, o)
	r.Problems = append(r.Problems, probs...)

	r.Problems = append(r.Problems, CheckRequirements(r.GPUs)...)
	r.Duration = time.Since(start)
	return r
}

// mergeOSGPUs adds the GPUs the OS listed that nvidia-smi did not already
// report. When nvidia-smi answered, the OS's NVIDIA entries are dropped (they
// are the same cards, with fewer facts); when it did not, they stay, and a
// finding says the driver should be looked at.
func mergeOSGPUs(nvGPUs, osGPUs []GPU, nv nvidiaResult, problems *[]Finding) []GPU {
	out := nvGPUs
	next := 0
	for _, g := range nvGPUs {
		if g.Index >= next {
			next = g.Index + 1
		}
	}
	sawNvidia := false
	for _, g := range osGPUs {
		if g.Vendor == VendorNVIDIA {
			if len(nvGPUs) > 0 {
				continue
			}
			sawNvidia = true
		}
		g.Index = next
		next++
		out = append(out, g)
	}
	if sawNvidia && len(nvGPUs) == 0 && nv.path == "" {
		*problems = append(*problems, Finding{
			Severity: SeverityError,
			What:     "this PC has an NVIDIA GPU, but nvidia-smi was not found, so its VRAM and driver cannot be checked",
			Fix:      "install or repair the NVIDIA driver (nvidia-smi comes with it), then probe again",
		})
	}
	return out
}

// MarshalJSON writes unknown figures (-1) as null and the display flag as
// true/false/null, with snake_case keys (the documented structure).
func (g GPU) MarshalJSON() ([]byte, error) {
	return json.Marshal(gpuJSON{
		Index: g.Index, Vendor: g.Vendor, Name: g.Name,
		TotalMiB: known(g.TotalMiB), UsedMiB: known(g.UsedMiB), FreeMiB: known(g.FreeMiB),
		Driver: g.Driver, ComputeCap: g.ComputeCap, Display: g.Display, MIG: g.MIG, Source: g.Source,
	})
}

// UnmarshalJSON reads what MarshalJSON writes (null figures become -1).
func (g *GPU) UnmarshalJSON(b []byte) error {
	var j gpuJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = GPU{GPU: nvsmi.GPU{Index: j.Index, Name: j.Name,
		TotalMiB: unknownIfNil(j.TotalMiB), UsedMiB: unknownIfNil(j.UsedMiB), FreeMiB: unknownIfNil(j.FreeMiB),
		Driver: j.Driver, ComputeCap: j.ComputeCap, Display: j.Display, MIG: j.MIG}, Vendor: j.Vendor, Source: j.Source}
	return nil
}

type gpuJSON struct {
	Index      int    `json:"index"`
	Vendor     string `json:"vendor"`
	Name       string `json:"name"`
	TotalMiB   *int   `json:"total_mib"`
	UsedMiB    *int   `json:"used_mib"`
	FreeMiB    *int   `json:"free_mib"`
	Driver     string `json:"driver"`
	ComputeCap string `json:"compute_cap"`
	Display    *bool  `json:"display"`
	MIG        string `json:"mig,omitempty"`
	Source     string `json:"source"`
}

func known(v int) *int {
	if v < 0 {
		return nil
	}
	return &v
}

func unknownIfNil(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
