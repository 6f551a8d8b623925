package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// Four logical processors on two physical cores (SMT), x86.
const cpuinfoRyzen = `processor	: 0
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 9 7950X 16-Core Processor
physical id	: 0
core id		: 0
cpu cores	: 2

processor	: 1
model name	: AMD Ryzen 9 7950X 16-Core Processor
physical id	: 0
core id		: 1

processor	: 2
model name	: AMD Ryzen 9 7950X 16-Core Processor
physical id	: 0
core id		: 0

processor	: 3
model name	: AMD Ryzen 9 7950X 16-Core Processor
physical id	: 0
core id		: 1
`

// A Raspberry Pi: no model name per processor, no core ids.
const cpuinfoARM = `processor	: 0
BogoMIPS	: 108.00
CPU implementer	: 0x41

processor	: 1
BogoMIPS	: 108.00

Hardware	: BCM2835
Model		: Raspberry Pi 4 Model B Rev 1.4
`

const meminfoSample = `MemTotal:       65536000 kB
MemFree:         2048000 kB
MemAvailable:   41943040 kB
Buffers:           28840 kB
Cached:          1790900 kB
`

func TestParseCPUInfo(t *testing.T) {
	c := parseCPUInfo([]byte(cpuinfoRyzen))
	if c != (CPU{Model: "AMD Ryzen 9 7950X 16-Core Processor", Cores: 2, Threads: 4}) {
		t.Errorf("x86: %+v", c)
	}
	c = parseCPUInfo([]byte(cpuinfoARM))
	if c != (CPU{Model: "Raspberry Pi 4 Model B Rev 1.4", Cores: 2, Threads: 2}) {
		t.Errorf("arm: %+v", c)
	}
}

func TestParseMemInfo(t *testing.T) {
	if r := parseMemInfo([]byte(meminfoSample)); r != (RAM{TotalMiB: 64000, FreeMiB: 40960}) {
		t.Errorf("%+v", r)
	}
	// Old kernels: no MemAvailable, so free + buffers + cache.
	old := "MemTotal: 2097152 kB\nMemFree: 1048576 kB\nBuffers: 1024 kB\nCached: 102400 kB\n"
	if r := parseMemInfo([]byte(old)); r != (RAM{TotalMiB: 2048, FreeMiB: 1024 + 1 + 100}) {
		t.Errorf("old kernel: %+v", r)
	}
	if r := parseMemInfo([]byte("garbage")); r != (RAM{-1, -1}) {
		t.Errorf("garbage: %+v", r)
	}
}

// sysfsCard writes a fake /sys/class/drm/renderD<n> with its PCI device
// folder reached through a symlink, the way Linux lays it out.
func sysfsCard(t *testing.T, root, node, pci string, files map[string]string) {
	t.Helper()
	dev := filepath.Join(root, "devices", "pci0000:00", pci)
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dev, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nodeDir := filepath.Join(root, "class", "drm", node)
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, filepath.Join(nodeDir, "device")); err != nil {
		t.Skipf("cannot make symlinks here (sysfs is Linux-only): %v", err)
	}
}

func TestReadSysfsGPUs(t *testing.T) {
	root := t.TempDir()
	// An RX 7900 XTX (24 GB) on the second slot, without product_name; an
	// MI210 with one on the first; an Intel iGPU; and an NVIDIA card.
	sysfsCard(t, root, "renderD129", "0000:03:00.0", map[string]string{
		"vendor": "0x1002\n", "device": "0x744c\n",
		"mem_info_vram_total": "25753026560\n", "mem_info_vram_used": "1073741824\n"})
	sysfsCard(t, root, "renderD128", "0000:01:00.0", map[string]string{
		"vendor": "0x1002\n", "device": "0x740f\n", "product_name": "AMD Instinct MI210\n",
		"mem_info_vram_total": "68702699520\n", "mem_info_vram_used": "garbage\n"})
	sysfsCard(t, root, "renderD130", "0000:00:02.0", map[string]string{"vendor": "0x8086\n", "device": "0xa780\n"})
	sysfsCard(t, root, "renderD131", "0000:05:00.0", map[string]string{"vendor": "0x10de\n", "device": "0x2684\n"})
	// A data-centre NVIDIA card without a DRM node, seen on the PCI bus only,
	// and a network card there that is no GPU.
	for pci, class := range map[string]string{"0000:41:00.0": "0x030200\n", "0000:42:00.0": "0x020000\n"} {
		dev := filepath.Join(root, "devices", "pci0000:40", pci)
		os.MkdirAll(dev, 0o755)
		os.WriteFile(filepath.Join(dev, "class"), []byte(class), 0o644)
		os.WriteFile(filepath.Join(dev, "vendor"), []byte("0x10de\n"), 0o644)
		os.WriteFile(filepath.Join(dev, "device"), []byte("0x2330\n"), 0o644)
		os.MkdirAll(filepath.Join(root, "bus", "pci", "devices"), 0o755)
		os.Symlink(dev, filepath.Join(root, "bus", "pci", "devices", pci))
	}
	// The AMD card is on the PCI bus too, and has a card node and a
	// connector: still one GPU.
	os.WriteFile(filepath.Join(root, "devices", "pci0000:00", "0000:03:00.0", "class"), []byte("0x030000\n"), 0o644)
	os.Symlink(filepath.Join(root, "devices", "pci0000:00", "0000:03:00.0"), filepath.Join(root, "bus", "pci", "devices", "0000:03:00.0"))
	os.MkdirAll(filepath.Join(root, "class", "drm", "card1"), 0o755)
	os.Symlink(filepath.Join(root, "devices", "pci0000:00", "0000:03:00.0"), filepath.Join(root, "class", "drm", "card1", "device"))
	os.MkdirAll(filepath.Join(root, "class", "drm", "card1-DP-1"), 0o755)
	os.Symlink(filepath.Join(root, "devices", "pci0000:00", "0000:00:02.0"), filepath.Join(root, "class", "drm", "card1-DP-1", "device"))
	// A second node for the same card is not a second GPU.
	os.MkdirAll(filepath.Join(root, "class", "drm", "renderD132"), 0o755)
	os.Symlink(filepath.Join(root, "devices", "pci0000:00", "0000:03:00.0"), filepath.Join(root, "class", "drm", "renderD132", "device"))

	gpus, err := ReadSysfsGPUs(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{GPU: nvsmi.GPU{Index: 0, Name: "Intel GPU (PCI 8086:a780)", TotalMiB: -1, UsedMiB: -1, FreeMiB: -1}, Vendor: VendorIntel, Source: SourceSysfs},
		{GPU: nvsmi.GPU{Index: 1, Name: "AMD Instinct MI210", TotalMiB: 65520, UsedMiB: -1, FreeMiB: -1}, Vendor: VendorAMD, Source: SourceSysfs},
		{GPU: nvsmi.GPU{Index: 2, Name: "AMD GPU (PCI 1002:744c)", TotalMiB: 24560, UsedMiB: 1024, FreeMiB: 23536}, Vendor: VendorAMD, Source: SourceSysfs},
		{GPU: nvsmi.GPU{Index: 3, Name: "NVIDIA GPU (PCI 10de:2684)", TotalMiB: -1, UsedMiB: -1, FreeMiB: -1}, Vendor: VendorNVIDIA, Source: SourceSysfs},
		{GPU: nvsmi.GPU{Index: 4, Name: "NVIDIA GPU (PCI 10de:2330)", TotalMiB: -1, UsedMiB: -1, FreeMiB: -1}, Vendor: VendorNVIDIA, Source: SourceSysfs},
	}
	if len(gpus) != len(want) {
		t.Fatalf("got %+v", gpus)
	}
	for i := range want {
		assertGPU(t, gpus[i], want[i])
	}
}

func TestReadSysfsNoGPUs(t *testing.T) {
	gpus, err := ReadSysfsGPUs(t.TempDir())
	if err != nil || len(gpus) != 0 {
		t.Fatalf("%v %v", gpus, err)
	}
}

func TestRegistryAdapters(t *testing.T) {
	// HardwareInformation.qwMemorySize is a QWORD: 24 GB here, beyond what
	// WMI's 32-bit AdapterRAM could say.
	as := []regAdapter{
		{Name: "NVIDIA GeForce RTX 4090", HardwareID: `pci\ven_10de&dev_2684`, Driver: "32.0.15.6094", MemBytes: 24 << 30},
		{Name: "AMD Radeon RX 7900 XTX", HardwareID: `PCI\VEN_1002&DEV_744C&REV_C8`, MemBytes: 24 << 30},
		{Name: "Intel(R) UHD Graphics 770", HardwareID: `pci\ven_8086&dev_4680`, MemBytes: 0},
		{Name: "Microsoft Basic Display Adapter", HardwareID: `root\basicdisplay`},
		{Name: "AMD Radeon RX 7900 XTX", HardwareID: `PCI\VEN_1002&DEV_744C&REV_C8`, MemBytes: 24 << 30}, // left behind by an old install
	}
	gpus := adaptersToGPUs(as)
	if len(gpus) != 3 {
		t.Fatalf("%+v", gpus)
	}
	if gpus[0].Vendor != VendorNVIDIA || gpus[0].TotalMiB != 24576 || gpus[1].Vendor != VendorAMD || gpus[1].TotalMiB != 24576 ||
		gpus[2].Vendor != VendorIntel || gpus[2].TotalMiB != -1 || gpus[2].Index != 2 {
		t.Errorf("%+v", gpus)
	}
	if mib, ok := regMemoryMiB([]byte{0, 0, 0, 0x80}); !ok || mib != 2048 {
		t.Errorf("REG_BINARY 4 bytes: %d %v", mib, ok)
	}
	if mib, ok := regMemoryMiB([]byte{0, 0, 0, 0, 4, 0, 0, 0}); !ok || mib != 16384 {
		t.Errorf("REG_BINARY 8 bytes: %d %v", mib, ok)
	}
	if _, ok := regMemoryMiB([]byte{1, 2, 3}); ok {
		t.Error("3 bytes decoded")
	}
}

func TestMergeDropsOSCopiesOfNvidiaCards(t *testing.T) {
	nv, _ := ParseNvidiaSMI([]byte(smiTwo))
	osg := []GPU{{GPU: nvsmi.GPU{Name: "x"}, Vendor: VendorNVIDIA, Source: SourceSysfs}, {GPU: nvsmi.GPU{Name: "AMD GPU", TotalMiB: 8192}, Vendor: VendorAMD, Source: SourceSysfs}}
	var probs []Finding
	got := mergeOSGPUs(nv, osg, nvidiaResult{path: "/x", gpus: nv}, &probs)
	if len(got) != 3 || got[2].Vendor != VendorAMD || got[2].Index != 2 || len(probs) != 0 {
		t.Fatalf("%+v %+v", got, probs)
	}
	// nvidia-smi missing while the OS shows an NVIDIA card: say so.
	got = mergeOSGPUs(nil, osg, nvidiaResult{}, &probs)
	if len(got) != 2 || len(probs) != 1 || !strings.Contains(probs[0].What, "nvidia-smi was not found") {
		t.Fatalf("%+v %+v", got, probs)
	}
}
