package relay

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// This PC's CPU encoder: its device and its projector (the second PC's
// device is remote.RemoteDevice).

// LocalCPUDevice is this PC's CPU at Strata's own CPU settings: the
// settings' threads, else half the cores; 300 image tokens unless chosen.
func LocalCPUDevice(st *settings.Settings) remote.Device {
	d := remote.Device{CUDADevice: -1, MaxTokens: st.CPUMaxTokens, Threads: st.CPUThreads, Why: settings.PlacementCPU.Name("")}
	if d.MaxTokens <= 0 {
		d.MaxTokens = remote.CPUMaxTokens
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
