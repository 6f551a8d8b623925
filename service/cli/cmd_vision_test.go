package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// visionTestConfig is the GPU-vision config as Strata's setup writes it.
const visionTestConfig = fakestrata.GPUVisionConfig

func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func visionFixture(t *testing.T) *fakestrata.Install {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: visionTestConfig})
	t.Setenv(locations.EnvHome, filepath.Dir(in.Settings))
	return in
}

func TestVisionDryRunPrintsTheDiffAndWritesNothing(t *testing.T) {
	in := visionFixture(t)
	before, _ := os.ReadFile(in.Config)
	// CPU: the config names the relay (which runs Strata's encoder without
	// --gpu); the move from the GPU edits the config, which Strata reads at
	// start. No service runs: nothing restarts it, and only that is said
	// (issue 40: not "Strata will restart" beside "restart the server").
	code, out, errs := cli(t, "vision", "cpu", "--threads", "6", "--dry-run", "--strata-root", in.Root, "--no-probe", "--relay", in.Relay)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"--- " + in.Config, "-    \"gpu\": true,", "+    \"gpu\": false,", "+    \"exe\": \"" + in.Relay,
		"Strata reads its config only at start and is not restarted now: it reads pictures on this PC's CPU from its next start.", "Dry run: nothing was written."} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "will restart") || strings.Contains(out, "(new)") {
		t.Fatalf("the output says what does not happen:\n%s", out)
	}
	after, _ := os.ReadFile(in.Config)
	if !bytes.Equal(before, after) || len(strataconfig.Backups(in.Config)) != 0 {
		t.Fatal("a dry run wrote something")
	}
	if _, err := os.Stat(in.Settings); err == nil {
		t.Fatal("a dry run saved the settings")
	}
}

func TestVisionCommandsEndToEnd(t *testing.T) {
	in := visionFixture(t)
	orig, _ := os.ReadFile(in.Config)

	code, out, errs := cli(t, "vision", "off", "--strata-root", in.Root)
	if code != 0 || strings.Count(out, "restart") != 1 || !strings.Contains(out, "is not restarted now: pictures are off from its next start.") || !strings.Contains(out, "-    \"--vision\",") {
		t.Fatalf("off: exit %d\n%s\n%s", code, out, errs)
	}
	s, _ := settings.Load(in.Settings)
	if s.Vision != settings.PlacementOff || s.ConfigPath != in.Config || s.StrataRoot != in.Root {
		t.Fatalf("settings = %+v", s)
	}
	// From here the settings name the install: no --strata-root needed.
	if code, _, errs = cli(t, "vision", "gpu", "--no-probe"); code != 0 {
		t.Fatalf("gpu: %s", errs)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, orig) {
		t.Fatalf("off then gpu did not give the config back:\n%s", got)
	}
	code, out, errs = cli(t, "vision", "remote", "--host", "alice@pc2.lan:2222", "--relay", in.Relay)
	if code != 0 || !strings.Contains(out, "remote pair alice@pc2.lan:2222") {
		t.Fatalf("remote: exit %d\n%s\n%s", code, out, errs)
	}
	s, _ = settings.Load(in.Settings)
	if s.Vision != settings.PlacementRemote || s.Remote == nil || s.Remote.Host != "pc2.lan" || s.Remote.User != "alice" || s.Remote.Port != 2222 {
		t.Fatalf("settings = %+v %+v", s, s.Remote)
	}
	c, _ := strataconfig.Read(in.Config)
	if c.Vision.Exe != in.Relay || c.Env[strataconfig.EnvSettings] != in.Settings {
		t.Fatalf("config: %+v env %v", c.Vision, c.Env)
	}
	// Again: nothing to change.
	code, out, _ = cli(t, "vision", "remote", "--relay", in.Relay)
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("remote again: %d %s", code, out)
	}
	// restore: back to the GPU config, and the settings follow.
	code, out, errs = cli(t, "vision", "restore")
	if code != 0 {
		t.Fatalf("restore: %s", errs)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, orig) {
		t.Fatalf("restore did not put the GPU config back:\n%s", out)
	}
	if s, _ = settings.Load(in.Settings); s.Vision != settings.PlacementGPU {
		t.Fatalf("settings after restore: %s", s.Vision)
	}
}

func TestVisionRefusalsExitNonZeroAndTouchNothing(t *testing.T) {
	in := visionFixture(t)
	cut := []byte(visionTestConfig[:200])
	os.WriteFile(in.Config, cut, 0o644)
	code, _, errs := cli(t, "vision", "cpu", "--strata-root", in.Root, "--no-probe")
	if code != 1 || !strings.Contains(errs, in.Config+" is not valid JSON") || !strings.Contains(errs, "ends too early") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, cut) {
		t.Fatal("a refused config was touched")
	}
	code, out, _ := cli(t, "status", "--strata-root", in.Root)
	if code != 1 || !strings.Contains(out, "Valid:      no") || !strings.Contains(out, "not valid JSON") {
		t.Fatalf("status on a broken config: %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"vision"}, {"vision", "sideways"}, {"vision", "cpu", "--device", "1"}, {"vision", "gpu", "--device", "first"},
		{"vision", "gpu", "--threads", "4"}, {"vision", "gpu", "extra"},
	} {
		if code, _, errs := cli(t, append(args, "--strata-root", in.Root)...); code != 2 || errs == "" {
			t.Fatalf("%v: exit %d %q, want a usage error", args, code, errs)
		}
	}
	os.WriteFile(in.Config, []byte(visionTestConfig), 0o644)
	if code, _, errs := cli(t, "vision", "remote", "--strata-root", in.Root); code != 2 || !strings.Contains(errs, "--host") {
		t.Fatalf("remote without a host: %d %s", code, errs)
	}
}

func TestStatusJSON(t *testing.T) {
	in := visionFixture(t)
	code, out, errs := cli(t, "status", "--json", "--strata-root", in.Root)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	var st strataStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	if st.Install == nil || st.Install.Root != in.Root || st.Config != in.Config || st.Placement != settings.PlacementGPU ||
		!st.Valid || st.Port != 8095 || st.Host != "127.0.0.1" || st.Settings != in.Settings {
		t.Fatalf("status = %+v", st)
	}
	os.Remove(filepath.Join(in.Root, "models", fakestrata.MMProjBF16))
	code, out, _ = cli(t, "status", "--json", "--strata-root", in.Root)
	json.Unmarshal([]byte(out), &st)
	if code != 1 || st.Valid || len(st.Problems) != 1 || !strings.Contains(st.Problems[0], "vision.mmproj") {
		t.Fatalf("status = %d %+v", code, st)
	}
	code, out, _ = cli(t, "status", "--strata-root", t.TempDir())
	if code != 1 || !strings.Contains(out, "not found") || !strings.Contains(out, "is not a Strata install") {
		t.Fatalf("no install: %d %s", code, out)
	}
}

// Once the config names the relay, status says where pictures are read from
// the settings (the relay follows them), with no "settings disagree" line:
// after `vision cpu`, then `vision off` (a settings-only move), it says off.
func TestStatusFollowsTheSettingsThroughTheRelay(t *testing.T) {
	in := visionFixture(t)
	for _, args := range [][]string{
		{"vision", "cpu", "--strata-root", in.Root, "--no-probe", "--relay", in.Relay},
		{"vision", "off", "--strata-root", in.Root},
	} {
		if code, out, errs := cli(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
		want := settings.Placement(args[1])
		code, out, errs := cli(t, "status", "--json", "--strata-root", in.Root)
		var st strataStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
			t.Fatalf("status: %d %v %s %s", code, err, out, errs)
		}
		if st.Placement != want || !st.Relay || st.SettingsPlacement != want {
			t.Errorf("after %v: status placement %q (relay %v, settings %q), want %q", args[:2], st.Placement, st.Relay, st.SettingsPlacement, want)
		}
		if _, text, _ := cli(t, "status", "--strata-root", in.Root); strings.Contains(text, "Settings:   say") {
			t.Errorf("after %v: status says the settings disagree:\n%s", args[:2], text)
		}
	}
}
