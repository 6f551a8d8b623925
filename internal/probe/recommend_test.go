package probe

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

func nv(idx int, name string, total, free int, cc string) GPU {
	return GPU{Index: idx, Vendor: VendorNVIDIA, Name: name, TotalMiB: total, UsedMiB: total - free, FreeMiB: free,
		Driver: "581.57", ComputeCap: cc, Source: SourceNvidiaSMI}
}

func report(os string, threads int, gpus ...GPU) *Report {
	r := &Report{OS: os, CPU: CPU{Model: "x", Cores: threads / 2, Threads: threads}, GPUs: gpus}
	r.Problems = CheckRequirements(gpus)
	return r
}

var (
	rtx5080    = nv(0, "NVIDIA GeForce RTX 5080", 16303, 14475, "12.0")
	rtx4090    = nv(0, "NVIDIA GeForce RTX 4090", 24564, 22980, "8.9")
	rtx3060    = nv(1, "NVIDIA GeForce RTX 3060", 12288, 12006, "8.6")
	rtx4070    = nv(0, "NVIDIA GeForce RTX 4070", 12282, 11000, "8.9")
	laptop8    = nv(0, "NVIDIA GeForce RTX 4060 Laptop GPU", 8188, 7800, "8.9")
	gtx1080    = GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA GeForce GTX 1080 Ti", TotalMiB: 11264, UsedMiB: 500, FreeMiB: 10764, Driver: "470.239.06", Source: SourceNvidiaSMI}
	amd7900    = GPU{Index: 0, Vendor: VendorAMD, Name: "AMD Radeon RX 7900 XTX", TotalMiB: 24560, UsedMiB: -1, FreeMiB: -1, Source: SourceSysfs}
	remote3060 = &RemoteFacts{Host: "pc2", Reachable: true, EncoderPresent: true,
		GPUs: []GPU{nv(0, "NVIDIA GeForce RTX 3060 Laptop GPU", 6144, 5920, "8.6")},
		RTT:  300 * time.Microsecond, UpBytesPerSec: 1.1e9, DownBytesPerSec: 1.1e9}
)

// mig80 is an A100 80 GB split into MIG slices: a program gets one slice.
func mig80() GPU {
	g := nv(0, "NVIDIA A100-SXM4-80GB", 81920, 81000, "8.0")
	g.MIG = MIGEnabled
	return g
}

func TestRecommend(t *testing.T) {
	one := 1
	cases := []struct {
		name    string
		local   *Report
		remote  *RemoteFacts
		want    settings.Placement
		device  *int
		inWhy   string
		warning string
	}{
		{"24 GB card: this GPU", report("linux", 32, rtx4090), nil, settings.PlacementGPU, nil, "24 GB", ""},
		{"24 GB card with a second PC: still this GPU", report("linux", 32, rtx4090), remote3060, settings.PlacementGPU, nil, "small share", ""},
		{"16 GB card and a second PC: remote", report("windows", 16, rtx5080), remote3060, settings.PlacementRemote, nil, "1383 MiB", ""},
		{"16 GB card alone: this GPU", report("windows", 16, rtx5080), nil, settings.PlacementGPU, nil, "no second PC", ""},
		{"16 GB card, second PC off: this GPU", report("windows", 16, rtx5080), &RemoteFacts{Host: "pc2", Reason: "connection refused"}, settings.PlacementGPU, nil, "no second PC", "pc2) is not reachable: connection refused"},
		{"a spare second GPU", report("linux", 16, rtx4090, rtx3060), remote3060, settings.PlacementGPU, &one, "spare", ""},
		{"12 GB card alone: GPU, with a warning", report("linux", 16, rtx4070), nil, settings.PlacementGPU, nil, "12 GB", "shrinks prompt chunks"},
		{"8 GB laptop alone: CPU", report("windows", 16, laptop8), nil, settings.PlacementCPU, nil, "only 8 GB", ""},
		{"8 GB laptop and a second PC: remote", report("windows", 16, laptop8), remote3060, settings.PlacementRemote, nil, "frees", ""},
		{"no GPU: CPU", report("linux", 16), nil, settings.PlacementCPU, nil, "no NVIDIA GPU", ""},
		{"no GPU, second PC: remote", report("linux", 16), remote3060, settings.PlacementRemote, nil, "no GPU here", ""},
		{"AMD on Linux: CPU", report("linux", 16, amd7900), nil, settings.PlacementCPU, nil, "AMD card on Linux", ""},
		{"AMD on Windows: off", report("windows", 16, amd7900), nil, settings.PlacementOff, nil, "AMD card on Windows", ""},
		{"AMD on Windows, second PC: remote", report("windows", 16, amd7900), remote3060, settings.PlacementRemote, nil, "no GPU here", ""},
		{"GTX 1080 with an old driver: CPU", report("linux", 16, gtx1080), nil, settings.PlacementCPU, nil, "card or driver too old", "older than Strata supports"},
		{"eight H100s: a spare one", report("linux", 64, eightH100()...), nil, settings.PlacementGPU, &one, "spare", ""},
		{"nil report", nil, nil, settings.PlacementCPU, nil, "CPU", ""},
		{"an 80 GB card split into MIG slices alone: not a whole card, CPU", report("linux", 16, mig80()), nil, settings.PlacementCPU, nil, "", "is split into MIG slices"},
		{"a MIG card beside a whole one: the whole one serves, no spare", report("linux", 16, mig80(), rtx3060), nil, settings.PlacementGPU, nil, "GPU 1", "is split into MIG slices"},
		{"second PC with only a MIG card", report("windows", 16, rtx5080), &RemoteFacts{Host: "pc2", Reachable: true, EncoderPresent: true, GPUs: []GPU{mig80()}}, settings.PlacementGPU, nil, "", "on the second PC (pc2): GPU 0 (NVIDIA A100-SXM4-80GB) is split into MIG slices"},
		{"second PC without a usable GPU", report("windows", 16, rtx5080), &RemoteFacts{Host: "pc2", Reachable: true, GPUs: []GPU{gtx1080}}, settings.PlacementGPU, nil, "", "on the second PC (pc2): GPU 0 (NVIDIA GeForce GTX 1080 Ti) is older"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := Recommend(c.local, c.remote)
			if rec.Placement != c.want {
				t.Fatalf("placement %s, want %s; reason: %s", rec.Placement, c.want, rec.Reason)
			}
			if (rec.Device == nil) != (c.device == nil) || (rec.Device != nil && *rec.Device != *c.device) {
				t.Errorf("device %v, want %v", rec.Device, c.device)
			}
			if !strings.Contains(rec.Reason, c.inWhy) {
				t.Errorf("reason %q does not say %q", rec.Reason, c.inWhy)
			}
			var ws []string
			for _, w := range rec.Warnings {
				ws = append(ws, w.What)
			}
			if c.warning != "" && !strings.Contains(strings.Join(ws, "\n"), c.warning) {
				t.Errorf("warnings %q do not say %q", ws, c.warning)
			}
			chosen, ok := rec.Chosen()
			if rec.Placement != settings.PlacementOff && (!ok || !chosen.Available || chosen.PictureSeconds <= 0 || chosen.Basis == "") {
				t.Errorf("chosen estimate %+v %v", chosen, ok)
			}
			if _, err := json.Marshal(rec); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestEstimatesRestOnTheMeasuredFigures(t *testing.T) {
	rec := Recommend(report("windows", 16, rtx5080), remote3060)
	byP := map[settings.Placement]Estimate{}
	for _, e := range rec.Estimates {
		byP[e.Placement] = e
	}
	// On the measured machine (RTX 5080, 8 CPU threads, RTX 3060 laptop over
	// 10 GbE), the estimates come back to the measured numbers, the remote
	// one less the ssh start per picture the relay does not pay.
	if e := byP[settings.PlacementGPU]; e.PictureSeconds != 1.63 || e.EncoderVRAMMiB != 1383 || e.FreesMiB != 0 {
		t.Errorf("gpu %+v", e)
	}
	if e := byP[settings.PlacementCPU]; e.PictureSeconds != 15.27 || e.EncoderVRAMMiB != 0 || e.FreesMiB != 1383 || !strings.Contains(e.Basis, "8 threads") {
		t.Errorf("cpu %+v", e)
	}
	e := byP[settings.PlacementRemote]
	want := 2.33 + 0.3e6/1.1e9 + 10e6/1.1e9 + 3*0.0003 + 0.05
	if math.Abs(e.PictureSeconds-want) > 0.006 || e.EncoderVRAMMiB != 0 || e.FreesMiB != 1383 {
		t.Errorf("remote %+v, want %.2f s", e, want)
	}
	for _, s := range []string{"RTX 3060 Laptop", "2.83 s", "10 MB back", "round trips"} {
		if !strings.Contains(e.Basis, s) {
			t.Errorf("remote basis %q does not say %q", e.Basis, s)
		}
	}
}

func TestEstimateScaling(t *testing.T) {
	// CPU: half the logical processors; 90% of the work spreads over them.
	for _, c := range []struct {
		threads int
		want    float64
	}{{16, 15.27}, {32, 8.40}, {8, 29.01}, {0, 15.27}} {
		if got := cpuEstimate(CPU{Threads: c.threads}).PictureSeconds; math.Abs(got-c.want) > 0.011 {
			t.Errorf("%d threads: %.2f s, want %.2f", c.threads, got, c.want)
		}
	}
	// Remote: a slower link costs the 10 MB result's transfer time; an
	// unmeasured link is assumed 1 Gbit/s and said so.
	fast := EstimateRemote(remote3060)
	slow := *remote3060
	slow.UpBytesPerSec, slow.DownBytesPerSec, slow.RTT = 12.5e6, 12.5e6, 2*time.Millisecond
	s := EstimateRemote(&slow)
	if d := s.PictureSeconds - fast.PictureSeconds; math.Abs(d-(0.8+0.024+0.006-0.0091-0.0009)) > 0.02 {
		t.Errorf("100 Mbit/s adds %.3f s", d)
	}
	unknown := *remote3060
	unknown.UpBytesPerSec, unknown.DownBytesPerSec, unknown.RTT = 0, 0, 0
	if u := EstimateRemote(&unknown); !u.Available || !strings.Contains(u.Basis, "1 Gbit/s assumed") {
		t.Errorf("%+v", u)
	}
	if e := EstimateRemote(nil); e.Available {
		t.Errorf("nil remote: %+v", e)
	}
	// A second PC with its GPU full: not available.
	full := *remote3060
	full.GPUs = []GPU{nv(0, "NVIDIA GeForce RTX 3060 Laptop GPU", 6144, 900, "8.6")}
	if e := EstimateRemote(&full); e.Available || !strings.Contains(e.Basis, "free") {
		t.Errorf("%+v", e)
	}
	// Big desktop cards get the RTX 5080's figure, the rest the careful one.
	for name, want := range map[string]float64{
		"NVIDIA GeForce RTX 4090": 1.63, "NVIDIA GeForce RTX 3080 Ti": 1.63, "NVIDIA H100 80GB HBM3": 1.63,
		"NVIDIA GeForce RTX 4090 Laptop GPU": 2.33, "NVIDIA GeForce RTX 2060": 2.33, "NVIDIA GeForce RTX 4060": 2.33,
	} {
		if got, _ := gpuEncodeSeconds(GPU{Name: name}); got != want {
			t.Errorf("%s: %.2f, want %.2f", name, got, want)
		}
	}
}

func TestRequirements(t *testing.T) {
	for _, c := range []struct {
		name, cc  string
		ok, known bool
	}{
		{"NVIDIA GeForce RTX 2060", "", true, true},
		{"NVIDIA GeForce GTX 1660 SUPER", "", false, true},
		{"NVIDIA GeForce GTX 1660 SUPER", "7.5", true, true},
		{"NVIDIA GeForce GTX 1080 Ti", "6.1", false, true},
		{"Tesla T4", "", true, true},
		{"NVIDIA A100-SXM4-80GB", "", true, true},
		{"NVIDIA A10G", "", true, true},
		{"NVIDIA L4", "", true, true},
		{"NVIDIA H100 80GB HBM3", "", true, true},
		{"Tesla V100-SXM2-16GB", "", false, true},
		{"Quadro P4000", "", false, true},
		{"Quadro RTX 4000", "", true, true},
		{"NVIDIA TITAN V", "", false, true},
		{"Some Future Card", "", false, false},
		{"Some Future Card", "10.0", true, true},
	} {
		ok, known := ArchSupported(GPU{Vendor: VendorNVIDIA, Name: c.name, ComputeCap: c.cc})
		if ok != c.ok || known != c.known {
			t.Errorf("%s (cc %q): ok %v known %v, want %v %v", c.name, c.cc, ok, known, c.ok, c.known)
		}
	}
	mk := func(drv string) GPU { g := rtx4090; g.Driver = drv; return g }
	for drv, want := range map[string]string{"581.57": "", "590.1": "", "550.120": "CUDA 12 build", "470.239.06": "too old for Strata"} {
		fs := CheckRequirements([]GPU{mk(drv), func() GPU { g := mk(drv); g.Index = 1; return g }()})
		got := ""
		for _, f := range fs {
			got += f.What + "\n"
		}
		if want == "" && got != "" || want != "" && strings.Count(got, want) != 1 {
			t.Errorf("driver %s: %q, want one finding saying %q", drv, got, want)
		}
	}
	if Usable(mk("470.1")) || !Usable(mk("550.1")) || Usable(amd7900) {
		t.Error("Usable")
	}
}

func TestGPUJSON(t *testing.T) {
	tr := true
	g := GPU{Index: 2, Vendor: VendorNVIDIA, Name: "n", TotalMiB: 100, UsedMiB: -1, FreeMiB: -1, Display: &tr, Source: SourceNvidiaSMI}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":2,"vendor":"NVIDIA","name":"n","total_mib":100,"used_mib":null,"free_mib":null,"driver":"","compute_cap":"","display":true,"source":"nvidia-smi"}`
	if string(b) != want {
		t.Errorf("%s\nwant %s", b, want)
	}
	var back GPU
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	assertGPU(t, back, g)
}

func eightH100() []GPU {
	gpus, _ := ParseNvidiaSMI([]byte(smiEight()))
	return gpus
}

// A figure measured elsewhere never reads as measured on this PC: every
// estimate that quotes one names the reference machine.
func TestEstimatesNameTheReferenceMachine(t *testing.T) {
	for name, rec := range map[string]Recommendation{
		"rtx5080+remote": Recommend(report("windows", 16, rtx5080), remote3060),
		"no gpu":         Recommend(report("linux", 2), nil),
	} {
		for _, e := range rec.Estimates {
			if !e.Available || e.Basis == "" {
				continue
			}
			if !strings.Contains(e.Basis, "reference machine") {
				t.Errorf("%s: %s basis quotes figures without naming where they were measured: %q", name, e.Placement, e.Basis)
			}
		}
		if strings.Contains(rec.Reason, " s each") && !strings.Contains(rec.Reason, "reference machine") {
			t.Errorf("%s: the reason gives a time as if measured here: %q", name, rec.Reason)
		}
	}
}

// Issue 40: once a trial picture was measured here, its figure replaces the
// estimate in the estimates and in the reason (no "about 111 s" beside a
// measured 0.78 s); a second PC's figure counts only for that PC; and the
// CPU's estimate names the reference machine's CPU, not its GPUs.
func TestMeasuredFiguresReplaceTheEstimates(t *testing.T) {
	if e := Recommend(report("linux", 2), nil).Estimates; !strings.Contains(e[1].Basis, "reference machine's CPU") || strings.Contains(e[1].Basis, "RTX") {
		t.Errorf("the CPU estimate's basis: %q", e[1].Basis)
	}
	at := func(s float64, host string) *settings.Measurement {
		return &settings.Measurement{PictureS: s, StartS: 0.4, When: "2026-12-05T10:30:00Z", Device: "this PC's CPU, 1 thread", Host: host}
	}
	rec := RecommendMeasured(report("linux", 2), nil, &settings.Measured{CPU: at(0.78, "")})
	if rec.Placement != settings.PlacementCPU || !strings.Contains(rec.Reason, "0.78 s each as measured here") || strings.Contains(rec.Reason, "about") {
		t.Errorf("reason %q", rec.Reason)
	}
	for _, e := range rec.Estimates {
		if e.Placement == settings.PlacementCPU && (!e.MeasuredHere || e.PictureSeconds != 0.78 || !strings.Contains(e.Basis, "measured here: 0.78 s per picture")) {
			t.Errorf("cpu estimate %+v", e)
		}
	}

	ms := &settings.Measured{GPU: at(1.42, ""), CPU: at(11.8, ""), Remote: at(2.61, "another-pc")}
	rec = RecommendMeasured(report("windows", 16, rtx5080), remote3060, ms)
	for _, e := range rec.Estimates {
		want := map[settings.Placement]bool{settings.PlacementGPU: e.Device == nil, settings.PlacementCPU: true}[e.Placement]
		if e.MeasuredHere != want {
			t.Errorf("%s (device %v): measured here %v, want %v", e.Placement, e.Device, e.MeasuredHere, want)
		}
	}
	if !strings.Contains(rec.Reason, "1.4 s measured here") || strings.Contains(rec.Reason, "1.6 s") {
		t.Errorf("reason %q", rec.Reason)
	}
	ms.Remote.Host = remote3060.Host
	for _, e := range RecommendMeasured(report("windows", 16, rtx5080), remote3060, ms).Estimates {
		if e.Placement == settings.PlacementRemote && (!e.MeasuredHere || e.PictureSeconds != 2.61) {
			t.Errorf("the second PC's own figure was not taken: %+v", e)
		}
	}
}
