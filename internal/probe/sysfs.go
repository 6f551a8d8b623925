package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// PCI vendor ids as sysfs and Windows hardware ids write them.
const (
	pciNVIDIA = "10de"
	pciAMD    = "1002"
	pciIntel  = "8086"
)

func vendorFromPCI(id string) string {
	switch strings.ToLower(strings.TrimPrefix(strings.TrimSpace(id), "0x")) {
	case pciNVIDIA:
		return VendorNVIDIA
	case pciAMD:
		return VendorAMD
	case pciIntel:
		return VendorIntel
	}
	return VendorOther
}

// ReadSysfsGPUs lists the GPUs Linux shows under root (normally "/sys"):
// the devices behind class/drm/renderD* and class/drm/cardN, and every PCI
// device of the display class (0x03xxxx), which also finds an NVIDIA card
// whose driver has no DRM node. AMD cards (amdgpu) report VRAM in
// mem_info_vram_total / mem_info_vram_used (bytes); others give a name from
// the PCI ids only. The name is product_name when the driver fills it, else
// the vendor and PCI ids. A card seen several ways is listed once. It
// returns no error for a machine without GPUs, only for a bad pattern.
func ReadSysfsGPUs(root string) ([]GPU, error) {
	var devs []string
	for _, pat := range []string{"class/drm/renderD*/device", "class/drm/card*/device"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return nil, err
		}
		for _, d := range m {
			card := filepath.Base(filepath.Dir(d))
			if strings.HasPrefix(card, "card") && strings.Trim(card[4:], "0123456789") != "" {
				continue // card0-DP-1 and the like are connectors
			}
			devs = append(devs, d)
		}
	}
	pci, err := filepath.Glob(filepath.Join(root, "bus/pci/devices/*"))
	if err != nil {
		return nil, err
	}
	for _, d := range pci {
		if strings.HasPrefix(readTrim(filepath.Join(d, "class")), "0x03") {
			devs = append(devs, d)
		}
	}
	type found struct {
		key string
		gpu GPU
	}
	var all []found
	seen := map[string]bool{}
	for _, dev := range devs {
		key := dev
		if real, err := filepath.EvalSymlinks(dev); err == nil {
			key = real
		} else if _, err := os.Stat(dev); err != nil {
			continue
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		g, ok := readSysfsGPU(dev)
		if !ok {
			continue
		}
		all = append(all, found{key, g})
	}
	// PCI address order (the device link's last element, 0000:03:00.0),
	// the order nvidia-smi and Strata count in.
	sort.SliceStable(all, func(i, j int) bool {
		return filepath.Base(all[i].key) < filepath.Base(all[j].key)
	})
	out := make([]GPU, 0, len(all))
	for i, f := range all {
		f.gpu.Index = i
		out = append(out, f.gpu)
	}
	return out, nil
}

func readSysfsGPU(dev string) (GPU, bool) {
	vendorID := readTrim(filepath.Join(dev, "vendor"))
	deviceID := readTrim(filepath.Join(dev, "device"))
	if vendorID == "" {
		return GPU{}, false
	}
	g := GPU{GPU: nvsmi.GPU{TotalMiB: -1, UsedMiB: -1, FreeMiB: -1}, Vendor: vendorFromPCI(vendorID), Source: SourceSysfs}
	g.Name = readTrim(filepath.Join(dev, "product_name"))
	if g.Name == "" {
		g.Name = fmt.Sprintf("%s GPU (PCI %s:%s)", g.Vendor, strings.TrimPrefix(vendorID, "0x"), strings.TrimPrefix(deviceID, "0x"))
		if g.Vendor == VendorOther {
			g.Name = fmt.Sprintf("GPU (PCI %s:%s)", strings.TrimPrefix(vendorID, "0x"), strings.TrimPrefix(deviceID, "0x"))
		}
	}
	if total, ok := readBytesAsMiB(filepath.Join(dev, "mem_info_vram_total")); ok {
		g.TotalMiB = total
		if used, ok := readBytesAsMiB(filepath.Join(dev, "mem_info_vram_used")); ok && used <= total {
			g.UsedMiB = used
			g.FreeMiB = total - used
		}
	}
	return g, true
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}

// readBytesAsMiB reads a decimal byte count.
func readBytesAsMiB(p string) (int, bool) {
	return parseBytesAsMiB(readTrim(p))
}

func parseBytesAsMiB(s string) (int, bool) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || v > 1<<50 {
		return 0, false
	}
	return int(v >> 20), true
}
