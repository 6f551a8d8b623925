package probe

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/nvsmi"
)

var venRE = regexp.MustCompile(`(?i)ven_([0-9a-f]{4})`)

// vendorFromHardwareID reads the vendor from a hardware id such as
// "pci\ven_10de&dev_2684&subsys_...".
func vendorFromHardwareID(id string) string {
	m := venRE.FindStringSubmatch(id)
	if m == nil {
		return VendorOther
	}
	return vendorFromPCI(m[1])
}

// regMemoryMiB decodes a VRAM size stored as REG_BINARY (little-endian, 4
// or 8 bytes): older drivers write HardwareInformation.MemorySize that way.
func regMemoryMiB(b []byte) (int, bool) {
	var v uint64
	switch len(b) {
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		v = binary.LittleEndian.Uint64(b)
	default:
		return 0, false
	}
	if v == 0 || v > 1<<50 {
		return 0, false
	}
	return int(v >> 20), true
}

// regAdapter is what one display-class subkey says.
type regAdapter struct {
	Name, HardwareID, Driver string
	MemBytes                 uint64 // 0: unknown
}

// adaptersToGPUs turns registry entries into GPUs: software adapters
// (Microsoft's basic and remote display) are dropped, and an adapter listed
// twice (old driver installs leave entries behind) is kept once.
func adaptersToGPUs(as []regAdapter) []GPU {
	var out []GPU
	seen := map[string]bool{}
	for _, a := range as {
		name := strings.TrimSpace(a.Name)
		if name == "" || strings.HasPrefix(strings.ToLower(name), "microsoft ") {
			continue
		}
		g := GPU{GPU: nvsmi.GPU{Name: name, TotalMiB: -1, UsedMiB: -1, FreeMiB: -1, Driver: strings.TrimSpace(a.Driver)}, Vendor: vendorFromHardwareID(a.HardwareID), Source: SourceRegistry}
		if a.MemBytes > 0 && a.MemBytes < 1<<50 {
			g.TotalMiB = int(a.MemBytes >> 20)
		}
		key := g.Name + "|" + strings.ToLower(a.HardwareID) + "|" + strconv.Itoa(g.TotalMiB)
		if seen[key] {
			continue
		}
		seen[key] = true
		g.Index = len(out)
		out = append(out, g)
	}
	return out
}
