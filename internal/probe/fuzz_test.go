package probe

import (
	"testing"
)

// FuzzParseProcFiles: the /proc parsers never panic and give sane figures.
func FuzzParseProcFiles(f *testing.F) {
	f.Add([]byte(cpuinfoRyzen), []byte(meminfoSample))
	f.Add([]byte(cpuinfoARM), []byte("MemTotal: 1 kB\nMemFree: x\n"))
	f.Fuzz(func(t *testing.T, cpu, mem []byte) {
		c := parseCPUInfo(cpu)
		if c.Threads < 0 || c.Cores < 0 {
			t.Fatalf("%+v", c)
		}
		r := parseMemInfo(mem)
		if r.TotalMiB < -1 || r.FreeMiB < -1 {
			t.Fatalf("%+v", r)
		}
	})
}

// FuzzRegistryMemory: any bytes decode to a sane size or none.
func FuzzRegistryMemory(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x80, 3, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if mib, ok := regMemoryMiB(b); ok && (mib < 0 || mib > 1<<30) {
			t.Fatalf("%d MiB from %x", mib, b)
		}
	})
}
