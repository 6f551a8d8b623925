//go:build linux

package probe

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
)

func probeCPURAM(_ context.Context, o Options) (CPU, RAM, []Finding) {
	var probs []Finding
	cpu := CPU{}
	if b, err := os.ReadFile(filepath.Join(o.ProcRoot, "cpuinfo")); err == nil {
		cpu = parseCPUInfo(b)
	} else {
		probs = append(probs, Finding{SeverityWarning, "could not read the CPU description: " + err.Error(), "the CPU encoder estimate assumes the thread count Go sees"})
	}
	if cpu.Threads == 0 {
		cpu.Threads = runtime.NumCPU()
	}
	if cpu.Cores == 0 {
		cpu.Cores = cpu.Threads
	}
	ram := RAM{TotalMiB: -1, FreeMiB: -1}
	if b, err := os.ReadFile(filepath.Join(o.ProcRoot, "meminfo")); err == nil {
		ram = parseMemInfo(b)
	} else {
		probs = append(probs, Finding{SeverityWarning, "could not read the memory figures: " + err.Error(), ""})
	}
	return cpu, ram, probs
}
