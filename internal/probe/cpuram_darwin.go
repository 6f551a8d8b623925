//go:build darwin

package probe

import (
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// probeCPURAM asks sysctl (always present on macOS). Free memory is not
// reported: macOS keeps RAM busy with cache and has no honest single figure.
func probeCPURAM(ctx context.Context, _ Options) (CPU, RAM, []Finding) {
	get := func(name string) string {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "/usr/sbin/sysctl", "-n", name).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	cpu := CPU{Model: get("machdep.cpu.brand_string")}
	cpu.Cores, _ = strconv.Atoi(get("hw.physicalcpu"))
	cpu.Threads, _ = strconv.Atoi(get("hw.logicalcpu"))
	if cpu.Threads == 0 {
		cpu.Threads = runtime.NumCPU()
	}
	if cpu.Cores == 0 {
		cpu.Cores = cpu.Threads
	}
	ram := RAM{TotalMiB: -1, FreeMiB: -1}
	if n, err := strconv.ParseInt(get("hw.memsize"), 10, 64); err == nil && n > 0 {
		ram.TotalMiB = int(n >> 20)
	}
	return cpu, ram, nil
}
