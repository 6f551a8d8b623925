package probe

import (
	"strings"
	"testing"
)

// FuzzParseNvidiaSMI: never panics; what it returns is sane; a result
// written back and read again is the same.
func FuzzParseNvidiaSMI(f *testing.F) {
	for _, s := range []string{smiOne5080CRLF, smiTwo, smiEight(), smiLaptop, smiNA, smiBasic, smiDriver, smiOldDrv, smiMism, smiNoDev, smiLost, "", ",,,,,,,", "0,a,1,2,3,4,5.5,Enabled,extra", "0, x,y, 1, 2, 3, 9.9\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, findings, err := ParseNvidiaSMIDetailed(b)
		if (err == nil) == (len(gpus) == 0) {
			t.Fatalf("error %v with %d GPUs", err, len(gpus))
		}
		if err != nil {
			se, ok := err.(*SMIError)
			if !ok {
				t.Fatalf("error of type %T", err)
			}
			if f := SMIFinding(se); f.What == "" || f.Severity == "" {
				t.Fatalf("empty finding for %v", err)
			}
			return
		}
		_ = findings
		seen := map[int]bool{}
		for _, g := range gpus {
			if g.Index < 0 || seen[g.Index] || g.Vendor != VendorNVIDIA || g.Source != SourceNvidiaSMI {
				t.Fatalf("bad GPU %+v", g)
			}
			seen[g.Index] = true
			for _, v := range []int{g.TotalMiB, g.UsedMiB, g.FreeMiB} {
				if v < -1 {
					t.Fatalf("memory figure %d in %+v", v, g)
				}
			}
			if strings.ContainsAny(g.Name, "\r\n") {
				t.Fatalf("name with a line break: %q", g.Name)
			}
		}
		again, err := ParseNvidiaSMI([]byte(FormatNvidiaSMI(gpus)))
		if err != nil || len(again) != len(gpus) {
			t.Fatalf("round trip of %+v: %v %v", gpus, again, err)
		}
		for i := range gpus {
			a, b := again[i], gpus[i]
			if a.Index != b.Index || a.Name != b.Name || a.TotalMiB != b.TotalMiB || a.UsedMiB != b.UsedMiB ||
				a.FreeMiB != b.FreeMiB || a.Driver != b.Driver || a.ComputeCap != b.ComputeCap {
				t.Fatalf("round trip changed %+v into %+v", b, a)
			}
		}
	})
}

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
