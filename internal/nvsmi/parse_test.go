package nvsmi

import (
	"errors"
	"strings"
	"testing"
)

// Replies as real nvidia-smi versions print them.
const (
	rtx5080CRLF = "0, NVIDIA GeForce RTX 5080, 16303, 1520, 14475, 581.57, 12.0, Enabled\r\n"
	twoCards    = "0, NVIDIA GeForce RTX 4090, 24564, 1234, 22980, 570.86.15, 8.9, Enabled\n1, NVIDIA GeForce RTX 3060, 12288, 5, 12006, 570.86.15, 8.6, Disabled\n"
	// A vGPU / some laptops: memory that is not reported.
	notSupported = "0, GRID A100D-4C, 4096, [N/A], [Not Supported], 535.104.05, 8.0, [N/A]\n"
	// A card that fell off the bus among a good one.
	lostAmongGood = "Unable to determine the device handle for GPU0000:02:00.0: GPU is lost.  Reboot the system to recover this GPU\n0, NVIDIA GeForce RTX 3090, 24576, 300, 23964, 575.57.08, 8.6, Enabled\n"
	basicSix      = "0, NVIDIA GeForce GTX 1080 Ti, 11264, 500, 10764, 470.239.06\n"
	oldDriver     = "Field \"compute_cap\" is not a valid field to query.\n"
	driverDown    = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"
	mismatch      = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.65\n"
	noDevices     = "No devices were found\n"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		out     string
		want    []GPU // Display and MIG not compared
		skipped int
		err     Kind
	}{
		{"one card, CRLF", rtx5080CRLF, []GPU{{0, "NVIDIA GeForce RTX 5080", 16303, 1520, 14475, "581.57", "12.0", nil, ""}}, 0, ""},
		{"two cards", twoCards, []GPU{{0, "NVIDIA GeForce RTX 4090", 24564, 1234, 22980, "570.86.15", "8.9", nil, ""},
			{1, "NVIDIA GeForce RTX 3060", 12288, 5, 12006, "570.86.15", "8.6", nil, ""}}, 0, ""},
		{"[N/A] and [Not Supported] memory is unknown, not 0", notSupported, []GPU{{0, "GRID A100D-4C", 4096, -1, -1, "535.104.05", "8.0", nil, ""}}, 0, ""},
		{"basic six fields", basicSix, []GPU{{0, "NVIDIA GeForce GTX 1080 Ti", 11264, 500, 10764, "470.239.06", "", nil, ""}}, 0, ""},
		{"one bad line among good ones keeps the good", lostAmongGood, []GPU{{0, "NVIDIA GeForce RTX 3090", 24576, 300, 23964, "575.57.08", "8.6", nil, ""}}, 1, ""},
		{"a garbled line between two good ones", "0, A, 1, 2, 3, 580.1, 8.9, Disabled\n0x#%!garbled, ,\n1, B, 4, 5, 6, 580.1, 8.9, Disabled\n",
			[]GPU{{0, "A", 1, 2, 3, "580.1", "8.9", nil, ""}, {1, "B", 4, 5, 6, "580.1", "8.9", nil, ""}}, 1, ""},
		{"a repeated index is kept once", twoCards + "1, again, 1, 1, 1, 570.86.15, 8.6, Disabled\n", []GPU{{Index: 0, Name: "NVIDIA GeForce RTX 4090", TotalMiB: 24564, UsedMiB: 1234, FreeMiB: 22980, Driver: "570.86.15", ComputeCap: "8.9"},
			{Index: 1, Name: "NVIDIA GeForce RTX 3060", TotalMiB: 12288, UsedMiB: 5, FreeMiB: 12006, Driver: "570.86.15", ComputeCap: "8.6"}}, 1, ""},
		{"header, units, BOM, spaces", "\ufeffindex, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], driver_version\r\n  3 ,  Tesla T4 , 15360 MiB , 0 MiB , 14913 MiB , 535.183.01 \r\n",
			[]GPU{{3, "Tesla T4", 15360, 0, 14913, "535.183.01", "", nil, ""}}, 0, ""},
		{"empty", "", nil, 0, Empty},
		{"blank lines only", "\r\n\n  \n", nil, 0, Empty},
		{"garbled", "\x00\xff\xfe binary junk, 1, 2\nmore junk\n", nil, 2, Garbage},
		{"old driver", oldDriver, nil, 1, UnknownField},
		{"driver down", driverDown, nil, 1, Driver},
		{"version mismatch", mismatch, nil, 2, Mismatch},
		{"no devices", noDevices, nil, 1, NoDevices},
		{"NVML", "Failed to initialize NVML: Unknown Error\n", nil, 1, NVML},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, skipped, err := Parse([]byte(c.out))
			if len(skipped) != c.skipped {
				t.Errorf("skipped %q, want %d lines", skipped, c.skipped)
			}
			if c.err != "" {
				var e *Error
				if !errors.As(err, &e) || e.Kind != c.err || len(got) != 0 {
					t.Fatalf("got %+v, %v; want error %s", got, err, c.err)
				}
				if sev, what, fix := e.Explain(); sev == "" || what == "" || fix == "" {
					t.Errorf("no words for %v", e)
				}
				return
			}
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("got %+v, %v; want %d GPUs", got, err, len(c.want))
			}
			for i := range got {
				g, w := got[i], c.want[i]
				g.Display = nil
				if g.Index != w.Index || g.Name != w.Name || g.TotalMiB != w.TotalMiB || g.UsedMiB != w.UsedMiB || g.FreeMiB != w.FreeMiB ||
					g.Driver != w.Driver || g.ComputeCap != w.ComputeCap || g.MIG != "" {
					t.Errorf("GPU %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestParseMIG(t *testing.T) {
	modes := ParseMIG([]byte("0, Enabled\r\n1, Disabled\n2, [N/A]\n3, Pending\ngarbage\n-1, Enabled\n4,\n"))
	want := map[int]string{0: MIGEnabled, 1: MIGDisabled, 2: MIGDisabled}
	if len(modes) != len(want) {
		t.Fatalf("modes %v, want %v", modes, want)
	}
	for i, m := range want {
		if modes[i] != m {
			t.Errorf("GPU %d: %q, want %q", i, modes[i], m)
		}
	}
	if len(ParseMIG([]byte(oldDriver))) != 0 {
		t.Error("an old driver's refusal gave MIG modes")
	}
}

func TestMIGWordsNameTheSlice(t *testing.T) {
	what, fix := MIGWords(GPU{Index: 1, Name: "NVIDIA A100-SXM4-80GB", MIG: MIGEnabled}, "on gpu-box")
	if !strings.Contains(what, "GPU 1 (NVIDIA A100-SXM4-80GB) on gpu-box is split into MIG slices") || !strings.Contains(fix, "MIG slice") {
		t.Errorf("%q / %q", what, fix)
	}
}

// FuzzParse: never panics; GPUs xor an error; figures sane; a result
// written back and read again is the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{rtx5080CRLF, twoCards, notSupported, lostAmongGood, basicSix, oldDriver, driverDown, mismatch, noDevices,
		"", ",,,,,,,", "0,a,1,2,3,4,5.5,Enabled,extra", "0, x,y, 1, 2, 3, 9.9\n", "0, Enabled\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, _, err := Parse(b)
		if (err == nil) == (len(gpus) == 0) {
			t.Fatalf("error %v with %d GPUs", err, len(gpus))
		}
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("error of type %T", err)
			}
			if _, what, _ := e.Explain(); what == "" {
				t.Fatalf("no words for %v", err)
			}
			return
		}
		seen := map[int]bool{}
		for _, g := range gpus {
			if g.Index < 0 || seen[g.Index] || strings.ContainsAny(g.Name, "\r\n") {
				t.Fatalf("bad GPU %+v", g)
			}
			seen[g.Index] = true
			for _, v := range []int{g.TotalMiB, g.UsedMiB, g.FreeMiB} {
				if v < -1 {
					t.Fatalf("memory figure %d in %+v", v, g)
				}
			}
		}
		again, _, err := Parse([]byte(Format(gpus)))
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
		ParseMIG(b)
	})
}
