package relay

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/settings"
)

// Device is where an encoder the relay starts reads pictures, and with what.
type Device struct {
	GPU bool
	// CUDADevice is the GPU by nvidia-smi index (-1: CUDA's first); GPUName
	// names it when prepare recorded it.
	CUDADevice int
	GPUName    string
	MaxTokens  int
	Threads    int // CPU threads (0: the encoder's default, half its PC's cores)
	// Why says how the device was chosen (for messages and `status`).
	Why string
}

// Image tokens per picture when the user chose none: Strata's own defaults
// (its setup writes 1024 for a GPU encoder and 300 for a CPU one).
const (
	GPUMaxTokens = 1024
	CPUMaxTokens = 300
)

// minGPUMiB is the least VRAM a GPU needs to hold the encoder (about 1.4 GB
// once warmed up) with room for the desktop.
const minGPUMiB = 2048

// CUDAIndex is d's GPU for AgentArgs (nil: CUDA's first).
func (d Device) CUDAIndex() *int {
	if !d.GPU || d.CUDADevice < 0 {
		return nil
	}
	i := d.CUDADevice
	return &i
}

// RemoteDevice decides the second PC's encoder device from what prepare
// found there and what the user chose (never from the --gpu Strata passes
// the relay: the relay's config says gpu false so that Strata does not
// count it as a GPU encoder): its GPU when it has a usable one (the one
// cuda_device names, else the one with the most VRAM), its CPU only by
// choice or when it has none.
func RemoteDevice(rm settings.Remote) Device {
	d := Device{CUDADevice: -1, MaxTokens: rm.MaxTokens}
	cpu := func(why string) Device {
		d.GPU, d.CUDADevice, d.Why, d.Threads = false, -1, why, rm.Threads
		if d.MaxTokens <= 0 {
			d.MaxTokens = CPUMaxTokens
		}
		return d
	}
	switch {
	case rm.Device == settings.DeviceCPU:
		return cpu("the second PC's CPU, as chosen")
	case rm.NoGPU && rm.Device != settings.DeviceGPU:
		return cpu("the second PC's CPU: prepare found no NVIDIA GPU there")
	}
	d.GPU = true
	if d.MaxTokens <= 0 {
		d.MaxTokens = GPUMaxTokens
	}
	var best *settings.RemoteGPU
	for i := range rm.GPUs {
		g := &rm.GPUs[i]
		if rm.CUDADevice != nil && g.Index == *rm.CUDADevice {
			best = g
			break
		}
		if g.TotalMiB != 0 && g.TotalMiB < minGPUMiB {
			continue
		}
		if best == nil || g.TotalMiB > best.TotalMiB {
			best = g
		}
	}
	switch {
	case best != nil:
		d.CUDADevice, d.GPUName = best.Index, best.Name
		if len(rm.GPUs) == 1 && rm.CUDADevice == nil {
			d.CUDADevice = -1 // the only one: as CUDA numbers it anyway
		}
		d.Why = "the second PC's GPU " + best.Name
	case rm.CUDADevice != nil:
		d.CUDADevice = *rm.CUDADevice
		d.Why = fmt.Sprintf("the second PC's GPU %d, as chosen", *rm.CUDADevice)
	case len(rm.GPUs) > 0 && rm.Device != settings.DeviceGPU:
		return cpu(fmt.Sprintf("the second PC's CPU: its GPU %s has too little VRAM for the encoder (%d MiB)", rm.GPUs[0].Name, rm.GPUs[0].TotalMiB))
	default:
		d.Why = "the second PC's GPU"
	}
	return d
}

// LocalCPUDevice is this PC's CPU at Strata's own CPU settings: the
// settings' threads, else half the cores; 300 image tokens unless chosen.
func LocalCPUDevice(st *settings.Settings) Device {
	d := Device{CUDADevice: -1, MaxTokens: st.CPUMaxTokens, Threads: st.CPUThreads, Why: settings.PlacementCPU.Name("")}
	if d.MaxTokens <= 0 {
		d.MaxTokens = CPUMaxTokens
	}
	if d.Threads <= 0 {
		d.Threads = max(1, runtime.NumCPU()/2)
	}
	return d
}

// CPUProjector is the projector for this PC's CPU: the Q8_0 one beside
// mmproj when the install has it (Strata recommends Q8_0 on the CPU:
// several times less work per picture than BF16), else mmproj itself. The
// sibling must belong to the same model (SameModelProjector): a projector
// of another model of the same family has the same n_embd but reads
// pictures wrongly, without an error.
func CPUProjector(mmproj string) string {
	base := strings.ToLower(filepath.Base(mmproj))
	if strings.Contains(base, "q8_0") {
		return mmproj
	}
	ents, _ := os.ReadDir(filepath.Dir(mmproj))
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		if !strings.Contains(n, "mmproj") || !strings.Contains(n, "q8_0") || !strings.HasSuffix(n, ".gguf") {
			continue
		}
		alt := filepath.Join(filepath.Dir(mmproj), e.Name())
		if SameModelProjector(mmproj, alt) {
			return alt
		}
	}
	return mmproj
}

// modelOf is the model a GGUF file says it belongs to: general.basename,
// else general.name without its precision words ("" when it says none).
func modelOf(p string) string {
	g, err := gguf.ReadFile(p)
	if err != nil {
		return ""
	}
	for _, k := range []string{"general.basename", "general.name"} {
		if v, ok := g.String(k); ok && strings.TrimSpace(v) != "" {
			return gguf.ProjectorStem(v)
		}
	}
	return ""
}

// SameModelProjector says whether alt is another precision of mmproj's
// own projector: its file name names the same model (once "mmproj" and
// the precision are left out), or the GGUF metadata of both names the same
// model; and its n_embd is mmproj's. A neighbour that only has the same
// n_embd is not.
func SameModelProjector(mmproj, alt string) bool {
	want, werr := gguf.NEmbd(mmproj)
	got, gerr := gguf.NEmbd(alt)
	if werr == nil && (gerr != nil || got != want) {
		return false
	}
	// The same name but for its precision ("mmproj-BF16" and
	// "mmproj-Q8_0" in a model's folder, or "mmproj-Coder-BF16" and
	// "mmproj-Coder-Q8_0"): the model's own.
	if gguf.ProjectorStem(mmproj) == gguf.ProjectorStem(alt) {
		return true
	}
	a, b := modelOf(mmproj), modelOf(alt)
	return a != "" && a == b
}
