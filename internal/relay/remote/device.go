package remote

import (
	"fmt"

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
