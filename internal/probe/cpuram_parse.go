package probe

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// parseCPUInfo reads Linux /proc/cpuinfo: the model name, the logical
// processors ("processor" entries) and the physical cores (distinct
// physical id / core id pairs; a CPU that lists none counts one core per
// processor).
func parseCPUInfo(b []byte) CPU {
	var c CPU
	cores := map[string]bool{}
	phys, core := "", ""
	hasCoreIDs := false
	rank := 0
	flush := func() {
		if core != "" {
			cores[phys+"/"+core] = true
		}
		phys, core = "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			flush()
			if _, err := strconv.Atoi(v); err == nil {
				c.Threads++
			}
		case "model name", "Model", "cpu model", "Hardware":
			// x86 says "model name"; ARM boards "Model" (the board) and
			// "Hardware" (the SoC): the most telling one wins.
			if p := modelKeyRank[k]; p > rank && v != "" {
				c.Model, rank = strings.Join(strings.Fields(v), " "), p
			}
		case "physical id":
			phys = v
		case "core id":
			core = v
			hasCoreIDs = true
		}
	}
	flush()
	if hasCoreIDs {
		c.Cores = len(cores)
	} else {
		c.Cores = c.Threads
	}
	return c
}

var modelKeyRank = map[string]int{"model name": 4, "cpu model": 3, "Model": 2, "Hardware": 1}

// parseMemInfo reads Linux /proc/meminfo: MemTotal and MemAvailable (what
// programs can get without swapping; MemFree alone undercounts the cache the
// kernel gives back). Values are kB; the result is MiB, -1 when missing.
func parseMemInfo(b []byte) RAM {
	r := RAM{TotalMiB: -1, FreeMiB: -1}
	var free, buffers, cached int = -1, -1, -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || n > 1<<50 {
			continue
		}
		mib := int(n / 1024)
		switch strings.TrimSpace(k) {
		case "MemTotal":
			r.TotalMiB = mib
		case "MemAvailable":
			r.FreeMiB = mib
		case "MemFree":
			free = mib
		case "Buffers":
			buffers = mib
		case "Cached":
			cached = mib
		}
	}
	if r.FreeMiB < 0 && free >= 0 {
		// Kernels before 3.14 lack MemAvailable.
		r.FreeMiB = free + max(buffers, 0) + max(cached, 0)
	}
	return r
}
