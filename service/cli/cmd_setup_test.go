package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func withDemo(t *testing.T) *demo.World {
	w := demo.NewWorld("/opt/strata")
	old := setupDeps
	setupDeps = func(_ *cliEnv, confirm setupflow.ConfirmHostKey) setupflow.Deps { return w.Deps(confirm) }
	t.Cleanup(func() {
		setupDeps = old
		setupFlags.yes, setupFlags.cli, setupFlags.page, setupFlags.acceptHost = false, false, "", ""
	})
	return w
}

func runSetupCLI(t *testing.T, input string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(context.Background(), append([]string{"setup", "--cli"}, args...), strings.NewReader(input), &out, &out)
	return code, out.String()
}

func TestSetupCLISecondPC(t *testing.T) {
	w := withDemo(t)
	// Enter, install 1, placement 3 (second PC), address, user, no password,
	// trust the key, pair, idle stop "soon" (refused) then 15m, CPU fallback
	// yes, tray no, apply yes.
	in := "\n1\n3\n192.168.1.20\nsam\nn\nyes\ny\nsoon\n15m\ny\nn\ny\n"
	code, out := runSetupCLI(t, in)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, s := range []string{"NVIDIA GeForce RTX 4080", "about 1.6 s per picture", demo.HostKey.Fingerprint,
		"RTX 3060 Laptop GPU", "round trip 0.9 ms", "strata-vision-relay", "| ready: http://127.0.0.1:8080/v1", "== Done ==",
		"Waking that PC: Possible", demo.DemoMAC, `"soon" is not an idle time`, "stops after 15m without a picture"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if w.Settings == nil || w.Settings.Vision != settings.PlacementRemote || !slices.Contains(w.Calls(), "start restart=false") {
		t.Fatalf("settings %+v calls %v", w.Settings, w.Calls())
	}
	if r := w.Settings.Remote; r == nil || r.IdleStopS != 900 || w.Settings.FallbackCPU == nil || !*w.Settings.FallbackCPU {
		t.Errorf("second-PC options saved: %+v fallback %v", r, w.Settings.FallbackCPU)
	}
}

func TestSetupCLIYesTakesDefaults(t *testing.T) {
	w := withDemo(t)
	code, out := runSetupCLI(t, "", "--yes")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if w.Settings.Vision != settings.PlacementGPU || w.Login {
		t.Errorf("--yes chose %s, login %t", w.Settings.Vision, w.Login)
	}
}

func TestSetupCLIYesNeverTrustsHostKey(t *testing.T) {
	w := withDemo(t)
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementGPU}
	code, out := runSetupCLI(t, "192.168.1.20\nsam\n", "--yes", "--page", "remote")
	if code == 0 || !strings.Contains(out, "not accepted") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if w.Paired {
		t.Error("paired without a trusted host key")
	}
	code, out = runSetupCLI(t, "192.168.1.20\nsam\n", "--yes", "--page", "remote", "--accept-host-key", demo.HostKey.Fingerprint)
	if code != 0 || !strings.Contains(out, "matches --accept-host-key") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestSetupCLICancelAtReviewChangesNothing(t *testing.T) {
	w := withDemo(t)
	before := w.ConfigText
	code, out := runSetupCLI(t, "\n1\n2\ny\nq\n")
	if code != 1 || !strings.Contains(out, "Nothing on this PC was changed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if w.ConfigText != before || w.Settings != nil || w.Installed {
		t.Error("Cancel at Review changed something")
	}
}

func TestSetupCLIBack(t *testing.T) {
	withDemo(t)
	// Welcome, install 1, then "b" at placement goes back to This PC, whose
	// answer-free page moves on again; choose the CPU; cancel at review.
	code, out := runSetupCLI(t, "\n1\nb\n2\nn\nn\n")
	if code != 1 || strings.Count(out, "== This PC ==") != 2 {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestSetupNeedsCLIFlag(t *testing.T) {
	withDemo(t)
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"setup"}, strings.NewReader(""), &out, &out); code == 0 || !strings.Contains(out.String(), "strata-setup") {
		t.Errorf("exit %d %s", code, out.String())
	}
}
