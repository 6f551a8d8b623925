//go:build linux

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// runCLIWith runs `strata-service <args>` as its own process (the test
// binary, through TestProbeCLIHelperProcess) with env added.
func runCLIWith(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProbeCLIHelperProcess$")
	cmd.Env = append(append(os.Environ(), "STRATA_PROBE_CLI_HELPER=1", "STRATA_PROBE_CLI_ARGS="+strings.Join(args, "\x1f")), env...)
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

// TestProbeMeasureOnTheDemoInstall is the issue's check: `probe --measure
// --json` on the demo install (strata-standin make-root with the stand-in
// encoder) reports the CPU's measured seconds, which agree with the
// stand-in's modelled time (2 ms x 300 tokens / 1 thread = 0.6 s), and the
// GPU's (the stand-in nvidia-smi's RTX 3060 laptop GPU: 1024 tokens at 40
// a ms, its warm-up apart); both are kept in the settings, and `status`
// shows "last measured" for the place pictures are read now (the demo
// config's GPU). No second PC is paired: none is tried.
func TestProbeMeasureOnTheDemoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-ins")
	}
	standinBin := testenv.Program(t, "../../internal/fakestrata/cmd/strata-standin")
	encoder := testenv.Program(t, "../../internal/fakeencoder/cmd/strata-vision-standin")
	root := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command(standinBin, "make-root", root, "--gpu", "none", "--encoder", encoder).CombinedOutput(); err != nil {
		t.Fatalf("make-root: %v\n%s", err, out)
	}
	home := t.TempDir()
	if err := (&settings.Settings{CPUThreads: 1}).Save(filepath.Join(home, "settings.json")); err != nil {
		t.Fatal(err)
	}
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	env := []string{locations.EnvHome + "=" + home, "PATH=" + smi + string(os.PathListSeparator) + os.Getenv("PATH")}

	stdout, stderr, code := runCLIWith(t, env, "probe", "--measure", "--json", "--strata-root", root)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var out struct {
		Measured []struct {
			Placement settings.Placement `json:"placement"`
			Measured  bool               `json:"measured"`
			Result    *measure.Result    `json:"result"`
			Kind      measure.Kind       `json:"kind"`
			Error     string             `json:"error"`
		} `json:"measured"`
		Measurement struct {
			Placement settings.Placement `json:"placement"`
			Reason    string             `json:"reason"`
		} `json:"measurement"`
		Recorded bool `json:"recorded"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	got := map[settings.Placement]*measure.Result{}
	for _, m := range out.Measured {
		if !m.Measured {
			t.Errorf("%s not measured: %s (%s)", m.Placement, m.Error, m.Kind)
			continue
		}
		got[m.Placement] = m.Result
		t.Logf("%s: picture %.2f s, start %.2f s, trial %.2f s (%s)", m.Placement, m.Result.PictureSeconds, m.Result.StartSeconds, m.Result.TrialSeconds, m.Result.Device)
	}
	if len(out.Measured) != 2 {
		t.Errorf("tried %d places, want the CPU and the GPU (no second PC is paired)", len(out.Measured))
	}
	if c := got[settings.PlacementCPU]; c != nil && (c.PictureSeconds < 0.59 || c.PictureSeconds > 0.6+5 || c.Tokens != 300) {
		t.Errorf("CPU: %.2f s for %d tokens, the stand-in models 0.60 s for 300", c.PictureSeconds, c.Tokens)
	}
	if g := got[settings.PlacementGPU]; g != nil && (g.Tokens != 1024 || g.StartSeconds < 0.17 || g.PictureSeconds > 5 || g.Note != "") {
		t.Errorf("GPU: %+v", g)
	}
	if !out.Recorded || out.Measurement.Reason == "" {
		t.Errorf("recorded %v, reason %q", out.Recorded, out.Measurement.Reason)
	}
	s, err := settings.Load(filepath.Join(home, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m := s.LastMeasured(settings.PlacementCPU); m == nil || m.Check() != nil || m.Device != "this PC's CPU, 1 thread" {
		t.Errorf("kept CPU record %+v", m)
	}
	if s.CPUThreads != 1 {
		t.Error("recording the figures changed another setting")
	}

	stdout, _, _ = runCLIWith(t, env, "status", "--strata-root", root)
	if !strings.Contains(stdout, "last measured: ") || !strings.Contains(stdout, "per picture, start ") {
		t.Errorf("status has no last-measured line:\n%s", stdout)
	}
	t.Logf("status:\n%s", stdout)

	// Issue 40: once measured, `probe` says the measured figures where it
	// said the estimates (the reason included), and no estimate beside them.
	stdout, _, _ = runCLIWith(t, env, "probe")
	t.Logf("probe after the trials:\n%s", stdout)
	for p, r := range got {
		if !strings.Contains(stdout, "    "+string(p)+strings.Repeat(" ", 9-len(p))+settings.Secs(r.PictureSeconds)+", ") {
			t.Errorf("probe does not give %s's measured %s", p, settings.Secs(r.PictureSeconds))
		}
	}
	for _, w := range []string{"rests on: ", "estimated", "about "} {
		if strings.Contains(stdout, w) {
			t.Errorf("probe still says %q beside the measured figures", w)
		}
	}
}
