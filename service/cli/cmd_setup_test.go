package cli

import (
	"bytes"
	"context"
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

func TestSetupNeedsCLIFlag(t *testing.T) {
	withDemo(t)
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"setup"}, strings.NewReader(""), &out, &out); code == 0 || !strings.Contains(out.String(), "strata-setup") {
		t.Errorf("exit %d %s", code, out.String())
	}
}

// The terminal wizard (service/termsetup) cancelled: exit 1, and nothing
// changed; its pages are tested in that package.
func TestSetupCLICancelExitsOne(t *testing.T) {
	w := withDemo(t)
	code, out := runSetupCLI(t, "q\n")
	if code != 1 || !strings.Contains(out, "strata-service setup: ") || w.Settings != nil || w.Installed {
		t.Errorf("exit %d, settings %+v, installed %t\n%s", code, w.Settings, w.Installed, out)
	}
}
