package probe

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// Outputs shaped like real nvidia-smi answers to nvsmi.QueryArgs /
// nvsmi.BasicQueryArgs.
const (
	smiOne5080CRLF = "0, NVIDIA GeForce RTX 5080, 16303, 1520, 14475, 581.57, 12.0, Enabled\r\n"
	smiTwo         = "0, NVIDIA GeForce RTX 4090, 24564, 1234, 22980, 570.86.15, 8.9, Enabled\n" +
		"1, NVIDIA GeForce RTX 3060, 12288, 5, 12006, 570.86.15, 8.6, Disabled\n"
	smiLaptop = "0, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 9, 5920, 581.57, 8.6, Disabled\n"
	smiNA     = "0, NVIDIA GeForce RTX 4070 Ti, 12282, [N/A], [N/A], 581.15, 8.9, [Not Supported]\n"
	smiBasic  = "0, NVIDIA GeForce GTX 1080 Ti, 11264, 500, 10764, 470.239.06\n"
	smiDriver = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n"
	smiOldDrv = "Field \"compute_cap\" is not a valid field to query.\n\n"
	smiMism   = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.120\n"
	smiNoDev  = "No devices were found\n"
	smiLost   = "0, NVIDIA GeForce RTX 3090, 24576, 300, 23964, 575.57.08, 8.6, Enabled\n" +
		"Unable to determine the device handle for GPU0000:02:00.0: GPU is lost.  Reboot the system to recover this GPU\n"
)

func smiEight() string {
	var b strings.Builder
	for i := 0; i < 8; i++ {
		b.WriteString(strings.ReplaceAll("I, NVIDIA H100 80GB HBM3, 81559, 1, 81005, 550.54.15, 9.0, Disabled\n", "I", string(rune('0'+i))))
	}
	return b.String()
}

func TestParseNvidiaSMI(t *testing.T) {
	tr, fa := true, false
	cases := []struct {
		name string
		out  string
		want []GPU
	}{
		{"one GPU, Windows CRLF", smiOne5080CRLF, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 5080", TotalMiB: 16303, UsedMiB: 1520, FreeMiB: 14475, Driver: "581.57", ComputeCap: "12.0", Display: &tr}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"two GPUs", smiTwo, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 4090", TotalMiB: 24564, UsedMiB: 1234, FreeMiB: 22980, Driver: "570.86.15", ComputeCap: "8.9", Display: &tr}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI},
			{GPU: nvsmi.GPU{Index: 1, Name: "NVIDIA GeForce RTX 3060", TotalMiB: 12288, UsedMiB: 5, FreeMiB: 12006, Driver: "570.86.15", ComputeCap: "8.6", Display: &fa}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"laptop", smiLaptop, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144, UsedMiB: 9, FreeMiB: 5920, Driver: "581.57", ComputeCap: "8.6", Display: &fa}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"[N/A] and [Not Supported]", smiNA, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 4070 Ti", TotalMiB: 12282, UsedMiB: -1, FreeMiB: -1, Driver: "581.15", ComputeCap: "8.9"}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"basic six fields", smiBasic, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce GTX 1080 Ti", TotalMiB: 11264, UsedMiB: 500, FreeMiB: 10764, Driver: "470.239.06"}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"extra spaces, header, units, blank lines", "\r\nindex, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], driver_version\r\n   3 ,  Tesla T4  ,  15360 MiB , 0 MiB , 14913 MiB ,  535.183.01   \r\n\r\n", []GPU{
			{GPU: nvsmi.GPU{Index: 3, Name: "Tesla T4", TotalMiB: 15360, UsedMiB: 0, FreeMiB: 14913, Driver: "535.183.01"}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
		{"a lost GPU among good ones", smiLost, []GPU{
			{GPU: nvsmi.GPU{Index: 0, Name: "NVIDIA GeForce RTX 3090", TotalMiB: 24576, UsedMiB: 300, FreeMiB: 23964, Driver: "575.57.08", ComputeCap: "8.6", Display: &tr}, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseNvidiaSMI([]byte(c.out))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d GPUs %+v, want %d", len(got), got, len(c.want))
			}
			for i := range got {
				assertGPU(t, got[i], c.want[i])
			}
		})
	}
}

func assertGPU(t *testing.T, got, want GPU) {
	t.Helper()
	gd, wd := "nil", "nil"
	if got.Display != nil {
		gd = map[bool]string{true: "true", false: "false"}[*got.Display]
	}
	if want.Display != nil {
		wd = map[bool]string{true: "true", false: "false"}[*want.Display]
	}
	got.Display, want.Display = nil, nil
	if got != want || gd != wd {
		t.Errorf("got %+v display=%s\nwant %+v display=%s", got, gd, want, wd)
	}
}

func TestParseNvidiaSMIEight(t *testing.T) {
	got, err := ParseNvidiaSMI([]byte(smiEight()))
	if err != nil || len(got) != 8 {
		t.Fatalf("got %d GPUs, err %v", len(got), err)
	}
	for i, g := range got {
		if g.Index != i || g.TotalMiB != 81559 || g.FreeMiB != 81005 || g.ComputeCap != "9.0" {
			t.Errorf("GPU %d: %+v", i, g)
		}
	}
}

func TestParseNvidiaSMISkippedLineIsReported(t *testing.T) {
	gpus, findings, err := ParseNvidiaSMIDetailed([]byte(smiLost))
	if err != nil || len(gpus) != 1 || len(findings) != 1 || !strings.Contains(findings[0].What, "GPU is lost") {
		t.Fatalf("gpus %v findings %+v err %v", gpus, findings, err)
	}
}

func TestParseNvidiaSMIFailures(t *testing.T) {
	cases := []struct {
		name, out string
		kind      nvsmi.Kind
		inWhat    string
	}{
		{"driver not answering", smiDriver, nvsmi.Driver, "could not talk to the NVIDIA driver"},
		{"driver not answering, CRLF", strings.ReplaceAll(smiDriver, "\n", "\r\n"), nvsmi.Driver, "couldn't communicate"},
		{"old driver rejects a field", smiOldDrv, nvsmi.UnknownField, "too old"},
		{"updated, not restarted", smiMism, nvsmi.Mismatch, "restart"},
		{"no devices", smiNoDev, nvsmi.NoDevices, "found no NVIDIA GPU"},
		{"NVML unknown error", "Failed to initialize NVML: Unknown Error\n", nvsmi.NVML, "management library"},
		{"empty", "", nvsmi.Empty, "printed nothing"},
		{"only blank CRLF lines", "\r\n\r\n", nvsmi.Empty, "printed nothing"},
		{"garbage", "\x00\x01garbage here\nmore, junk, 1, 2\n", nvsmi.Garbage, "cannot read"},
		{"too few fields", "0, NVIDIA GeForce RTX 4090, 24564\n", nvsmi.Garbage, "cannot read"},
		{"memory not a number", "0, NVIDIA GeForce RTX 4090, lots, 1, 2, 570.1\n", nvsmi.Garbage, "cannot read"},
		{"index not a number", "GPU0, NVIDIA GeForce RTX 4090, 24564, 1, 2, 570.1\n", nvsmi.Garbage, "cannot read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gpus, err := ParseNvidiaSMI([]byte(c.out))
			if err == nil {
				t.Fatalf("no error, GPUs %+v", gpus)
			}
			var se *nvsmi.Error
			if !errors.As(err, &se) || se.Kind != c.kind {
				t.Fatalf("error %v, want kind %s", err, c.kind)
			}
			f := SMIFinding(se)
			if f.Fix == "" || !strings.Contains(f.What+" "+f.Fix, c.inWhat) {
				t.Errorf("finding %+v does not say %q", f, c.inWhat)
			}
		})
	}
}

func TestDuplicateIndexKeptOnce(t *testing.T) {
	gpus, _, err := ParseNvidiaSMIDetailed([]byte(smiTwo + smiTwo))
	if err != nil || len(gpus) != 2 {
		t.Fatalf("gpus %v err %v", gpus, err)
	}
}

// fakeRunner answers like an nvidia-smi that knows only the basic fields.
func fakeRunner(rich, basic string, err error) (Runner, *[]string) {
	var calls []string
	return func(_ context.Context, args []string) ([]byte, error) {
		a := strings.Join(args, " ")
		calls = append(calls, a)
		if strings.Contains(a, "compute_cap") {
			return []byte(rich), err
		}
		return []byte(basic), err
	}, &calls
}

func TestQueryNvidiaFallsBackForOldDrivers(t *testing.T) {
	run, calls := fakeRunner(smiOldDrv, smiBasic, nil)
	gpus, q, probs := QueryNvidia(context.Background(), run, "/usr/bin/nvidia-smi")
	if q != nvsmi.QueryBasic || len(gpus) != 1 || gpus[0].Name != "NVIDIA GeForce GTX 1080 Ti" {
		t.Fatalf("query %q gpus %+v", q, gpus)
	}
	if len(*calls) != 3 || (*calls)[0] != nvsmi.QueryArgs || (*calls)[1] != nvsmi.BasicQueryArgs || (*calls)[2] != nvsmi.MIGQueryArgs {
		t.Errorf("calls %q", *calls)
	}
	if len(probs) != 1 || probs[0].Severity != SeverityWarning || !strings.Contains(probs[0].What, "too old") {
		t.Errorf("problems %+v: want one warning that the basic query was used", probs)
	}
}

func TestQueryNvidiaRich(t *testing.T) {
	run, calls := fakeRunner(smiTwo, "unused", nil)
	gpus, q, probs := QueryNvidia(context.Background(), run, "")
	// The GPU query, then the MIG one (a garbled MIG answer leaves MIG unknown).
	if q != nvsmi.QueryRich || len(gpus) != 2 || len(probs) != 0 || len(*calls) != 2 || (*calls)[1] != nvsmi.MIGQueryArgs || gpus[0].MIG != "" {
		t.Fatalf("query %q gpus %d problems %+v calls %q", q, len(gpus), probs, *calls)
	}
}

func TestQueryNvidiaRunnerErrors(t *testing.T) {
	cases := []struct {
		name string
		out  string
		err  error
		want string
	}{
		{"timeout", "", context.DeadlineExceeded, "did not answer in time"},
		{"not found", "", nvsmi.ErrNotFound, "was not found"},
		{"exec failure", "", nvsmi.ErrStart, "could not be started"},
		{"exit status and the driver message", smiDriver, &exec.ExitError{}, "could not talk to the NVIDIA driver"},
		{"exit status, no output", "", errors.New("exit status 9"), "exit status 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, _ := fakeRunner(c.out, c.out, c.err)
			gpus, q, probs := QueryNvidia(context.Background(), run, "host")
			if len(gpus) != 0 || q != "" || len(probs) != 1 {
				t.Fatalf("gpus %v query %q problems %+v", gpus, q, probs)
			}
			if !strings.Contains(probs[0].What, c.want) {
				t.Errorf("finding %+v does not say %q", probs[0], c.want)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	gpus, err := ParseNvidiaSMI([]byte(smiTwo + smiNA[0:0] + "2, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n"))
	if err != nil || len(gpus) != 3 {
		t.Fatalf("%v %v", gpus, err)
	}
	again, err := ParseNvidiaSMI([]byte(FormatNvidiaSMI(gpus)))
	if err != nil || len(again) != len(gpus) {
		t.Fatalf("%v %v", again, err)
	}
	for i := range gpus {
		assertGPU(t, again[i], gpus[i])
	}
}
