package agent

import (
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/nvsmi"
)

// The agent reads nvidia-smi through an nvsmi.Watcher: one run at a time,
// off the frame loop, each bounded by gpuReadTimeout (and killed past it).
// The frame loop waits for a reading at most statusWait (a status) or
// observeWait (around an encoder's start, while it beats); a stuck driver
// then costs it that long, once, and the answer says "unknown" instead of
// a figure.
const (
	gpuReadTimeout = 5 * time.Second
	statusWait     = 3 * time.Second
	observeWait    = 8 * time.Second
)

// gpuReading is one look at the GPUs: fresh says it was taken when asked
// (not an older one handed out because nvidia-smi did not answer in time).
type gpuReading struct {
	gpus  []nvsmi.GPU
	err   *nvsmi.Error
	fresh bool
}

// readGPUs waits up to wait for a reading begun at or after since.
func (a *agent) readGPUs(since time.Time, wait time.Duration) gpuReading {
	r, fresh := a.gpus.Read(since, wait)
	if !fresh {
		fmt.Fprintf(a.cfg.Log, "strata-vision-relay agent: nvidia-smi did not answer within %s; GPU figures are left unknown\n", wait)
	}
	return gpuReading{gpus: r.GPUs, err: r.Err, fresh: fresh}
}

// measure fills w (an encoder on a GPU) with the card at index idx, as the
// readings before and after the encoder's start show it: its name, whether
// it is MIG-partitioned, and the VRAM the encoder took, known only when
// both readings are fresh and give that card's used memory.
func measure(w framing.Where, idx int, before, after gpuReading) framing.Where {
	w.GPUIndex = idx
	a, ok := find(after.gpus, idx)
	if !ok {
		return w
	}
	w.GPU, w.MIG = a.Name, a.Partitioned()
	b, ok := find(before.gpus, idx)
	if ok && before.fresh && after.fresh && a.UsedMiB >= 0 && b.UsedMiB >= 0 {
		w.VRAMMiB, w.VRAMKnown = max(0, a.UsedMiB-b.UsedMiB), true
	}
	return w
}

func find(gs []nvsmi.GPU, idx int) (nvsmi.GPU, bool) {
	for _, g := range gs {
		if g.Index == idx {
			return g, true
		}
	}
	return nvsmi.GPU{}, false
}

// toFraming writes nvidia-smi's GPUs as the agent reports them: an unknown
// figure is 0 and named in Unknown.
func toFraming(gs []nvsmi.GPU) []framing.GPU {
	var out []framing.GPU
	for _, g := range gs {
		f := framing.GPU{Index: g.Index, Name: g.Name, Driver: g.Driver, MIG: g.Partitioned()}
		for _, m := range []struct {
			v    int
			dst  *int
			name string
		}{{g.TotalMiB, &f.TotalMiB, framing.GPUTotal}, {g.UsedMiB, &f.UsedMiB, framing.GPUUsed}, {g.FreeMiB, &f.FreeMiB, framing.GPUFree}} {
			if m.v < 0 {
				f.Unknown = append(f.Unknown, m.name)
			} else {
				*m.dst = m.v
			}
		}
		out = append(out, f)
	}
	return out
}
