//go:build !windows

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/testenv"
)

// TestProbeCLIHelperProcess is not a test: the tests below run the test
// binary again as `strata-service probe ...` (a real process with a real exit
// code), through this function.
func TestProbeCLIHelperProcess(t *testing.T) {
	if os.Getenv("STRATA_PROBE_CLI_HELPER") != "1" {
		t.Skip("helper process")
	}
	args := strings.Split(os.Getenv("STRATA_PROBE_CLI_ARGS"), "\x1f")
	os.Exit(Main(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
}

// runProbeCLI runs `strata-service <args>` as its own process with a fake
// nvidia-smi first on PATH, and returns stdout, stderr and the exit code.
func runProbeCLI(t *testing.T, smiScript string, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	if smiScript != "" {
		if err := testenv.WriteExecutable(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+smiScript)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProbeCLIHelperProcess$")
	cmd.Env = append(os.Environ(),
		"STRATA_PROBE_CLI_HELPER=1",
		"STRATA_PROBE_CLI_ARGS="+strings.Join(args, "\x1f"),
		"PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		locations.EnvHome+"="+t.TempDir(),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// The fake answers exactly the query probe sends, as a real nvidia-smi with
// two cards does.
const twoGPUScript = `case "$*" in
  *"--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version,compute_cap,display_active --format=csv,noheader,nounits"*)
    printf '0, NVIDIA GeForce RTX 4090, 24564, 1234, 22980, 581.57, 8.9, Enabled\n'
    printf '1, NVIDIA GeForce RTX 3060, 12288, 5, 12006, 581.57, 8.6, Disabled\n' ;;
  *) echo "unexpected arguments: $*"; exit 2 ;;
esac
`

func TestProbeCLIJSONTwoGPUs(t *testing.T) {
	stdout, stderr, code := runProbeCLI(t, twoGPUScript, "probe", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var out struct {
		Schema int `json:"schema"`
		Report struct {
			GPUs []struct {
				Index    int    `json:"index"`
				Name     string `json:"name"`
				TotalMiB *int   `json:"total_mib"`
				FreeMiB  *int   `json:"free_mib"`
				UsedMiB  *int   `json:"used_mib"`
				Source   string `json:"source"`
			} `json:"gpus"`
			NvidiaSMI string          `json:"nvidia_smi"`
			Problems  []probe.Finding `json:"problems"`
		} `json:"report"`
		Recommendation probe.Recommendation `json:"recommendation"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if out.Schema != 1 || !strings.HasSuffix(out.Report.NvidiaSMI, "/nvidia-smi") {
		t.Errorf("schema %d, nvidia_smi %q", out.Schema, out.Report.NvidiaSMI)
	}
	g := out.Report.GPUs
	if len(g) != 2 || g[0].Name != "NVIDIA GeForce RTX 4090" || *g[0].TotalMiB != 24564 || *g[0].FreeMiB != 22980 || *g[0].UsedMiB != 1234 ||
		g[1].Name != "NVIDIA GeForce RTX 3060" || *g[1].TotalMiB != 12288 || *g[1].FreeMiB != 12006 || g[1].Index != 1 {
		t.Fatalf("GPUs: %s", stdout)
	}
	// The 3060 is a spare: the recommendation is that GPU, by its index.
	rec := out.Recommendation
	if rec.Placement != "gpu" || rec.Device == nil || *rec.Device != 1 || rec.Reason == "" {
		t.Errorf("recommendation %+v", rec)
	}
}

func TestProbeCLIFailingNvidiaSMIExitsZero(t *testing.T) {
	failing := `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
echo
exit 9
`
	stdout, stderr, code := runProbeCLI(t, failing, "probe")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"could not talk to the NVIDIA driver", "couldn't communicate with the NVIDIA driver", "what to do: ", "restart the PC", "Recommendation: read pictures on this PC's CPU"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, stdout)
		}
	}
	stdout, _, code = runProbeCLI(t, failing, "probe", "--json")
	var out struct {
		Report struct {
			GPUs     []any           `json:"gpus"`
			Problems []probe.Finding `json:"problems"`
		} `json:"report"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Report.GPUs == nil || len(out.Report.GPUs) != 0 {
		t.Fatalf("exit %d, JSON:\n%s", code, stdout)
	}
	found := false
	for _, p := range out.Report.Problems {
		found = found || (p.Severity == "error" && strings.Contains(p.What, "could not talk to the NVIDIA driver"))
	}
	if !found {
		t.Errorf("no driver finding in %+v", out.Report.Problems)
	}
}

// `probe --ssh` is built in (the old "not yet available" answer is gone):
// its flags are in probe's help; its behaviour against a real sshd is in
// cmd_remote_integration_test.go.
func TestProbeCLISSHIsBuiltIn(t *testing.T) {
	var out, errb strings.Builder
	if code := Main(context.Background(), []string{"probe", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("probe --help: exit %d\n%s", code, errb.String())
	}
	for _, f := range []string{"-ssh ", "-identity ", "-accept-host-key ", "-remote-dir ", "-transfer-mb "} {
		if !strings.Contains(out.String(), "  "+f) {
			t.Errorf("probe --help lacks %s (the second-PC probe is not wired):\n%s", f, out.String())
		}
	}
}
