// Command nvidia-smi-standin answers the GPU query as a driver with one RTX
// 3060 Laptop GPU would (docs/strata.md's second PC), and rejects anything else as
// a real nvidia-smi does. Built as nvidia-smi.exe into the Windows test PC's
// C:\Windows\System32, where modern drivers put the real one, and as
// nvidia-smi on a Linux test second PC's PATH (testenv.NvidiaSMI).
//
// Two files beside it change what it shows, so a test can play a PC:
//   - nvidia-smi.gpus: one GPU per line, "NAME,TOTAL_MIB" (",mig" after it:
//     a card split into MIG slices, as mig.mode.current says); the word "none"
//     (or an empty file) is a PC whose driver finds no GPU: "No devices were
//     found", exit code 6, as the real one says;
//   - nvidia-smi.claims/<pid>: "<index> <MiB>", written by the stand-in
//     strata-vision while it holds VRAM on a GPU (a GPU encoder's ~1.4 GB):
//     counted as used memory while that process lives, as the driver counts
//     a live process's allocations.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

type gpu struct {
	name  string
	total int
	used  int
	mig   bool
}

const idleUsedMiB = 412 // the desktop's own use of the laptop GPU

// reservedMiB is what the driver keeps for itself: a real nvidia-smi's free
// is total - used - reserved (6144, 412, 5606 on the reference laptop).
const reservedMiB = 126

func gpus(dir string) ([]gpu, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "nvidia-smi.gpus"))
	if err != nil {
		return []gpu{{name: "NVIDIA GeForce RTX 3060 Laptop GPU", total: 6144, used: idleUsedMiB}}, true
	}
	var out []gpu
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "none" {
			continue
		}
		name, total, _ := strings.Cut(l, ",")
		total, mig, _ := strings.Cut(total, ",")
		n, err := strconv.Atoi(strings.TrimSpace(total))
		if err != nil {
			continue
		}
		out = append(out, gpu{name: strings.TrimSpace(name), total: n, used: idleUsedMiB, mig: strings.TrimSpace(mig) == "mig"})
	}
	return out, len(out) > 0
}

// addClaims counts the VRAM that live processes hold.
func addClaims(dir string, gs []gpu) {
	ents, _ := os.ReadDir(filepath.Join(dir, "nvidia-smi.claims"))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "nvidia-smi.claims", e.Name()))
		if err != nil {
			continue
		}
		var idx, mib int
		if _, err := fmt.Sscan(string(b), &idx, &mib); err == nil && idx >= 0 && idx < len(gs) {
			gs[idx].used = min(gs[idx].total, gs[idx].used+mib)
		}
	}
}

// field is one --query-gpu field of GPU i, as nvidia-smi prints it with
// --format=csv,noheader,nounits; false for a field it does not know.
func field(i int, g gpu, f string) (string, bool) {
	switch f {
	case "index":
		return strconv.Itoa(i), true
	case "name":
		return g.name, true
	case "memory.total":
		return strconv.Itoa(g.total), true
	case "memory.used":
		return strconv.Itoa(g.used), true
	case "memory.free":
		return strconv.Itoa(max(0, g.total-g.used-reservedMiB)), true
	case "driver_version":
		return "581.57", true
	case "compute_cap":
		return "8.6", true
	case "display_active":
		return "Disabled", true
	case "mig.mode.current":
		// A card that cannot be split says [N/A], as laptop GPUs do.
		if g.mig {
			return "Enabled", true
		}
		return "[N/A]", true
	}
	return "", false
}

func main() {
	dir := "."
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "--query-gpu=") {
			gs, ok := gpus(dir)
			if !ok {
				fmt.Println("No devices were found")
				os.Exit(6)
			}
			// The fields asked for, in their order, as the real one answers.
			fields := strings.Split(strings.TrimPrefix(a, "--query-gpu="), ",")
			addClaims(dir, gs)
			for i, g := range gs {
				vals := make([]string, len(fields))
				for j, f := range fields {
					v, ok := field(i, g, f)
					if !ok {
						fmt.Printf("Field \"%s\" is not a valid field to query.\n\n", f)
						os.Exit(2)
					}
					vals[j] = v
				}
				fmt.Println(strings.Join(vals, ", "))
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "unexpected arguments: %s\n", strings.Join(os.Args[1:], " "))
	os.Exit(2)
}
