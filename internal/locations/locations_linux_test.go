package locations

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

// A normal user's programs find the same settings and state as a root
// service: run this test binary's check as nobody.
func TestNormalUserFindsTheMachinesSettings(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux to run a check as a normal user")
	}
	if os.Getenv("LOCATIONS_CHILD") == "1" {
		return
	}
	t.Setenv(EnvHome, "")
	rootSettings, rootState := SettingsFile(), Path(StateDir)
	self, _ := os.Executable()
	bin := filepath.Join(t.TempDir(), "locations.test")
	data, _ := os.ReadFile(self)
	os.WriteFile(bin, data, 0o755)
	testenv.OpenPath(t, bin)
	cmd := exec.Command(bin, "-test.run", "TestPrintLocations", "-test.v")
	cmd.Env = append(os.Environ(), "LOCATIONS_PRINT=1", EnvHome+"=", "HOME=/nonexistent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "settings="+rootSettings+" ") || !strings.Contains(string(out), "state="+rootState+" ") {
		t.Fatalf("a normal user sees:\n%s\nroot: settings=%s state=%s", out, rootSettings, rootState)
	}
}

func TestPrintLocations(t *testing.T) {
	if os.Getenv("LOCATIONS_PRINT") != "1" {
		t.Skip("helper of TestNormalUserFindsTheMachinesSettings")
	}
	t.Logf("uid=%d settings=%s state=%s ", os.Getuid(), SettingsFile(), Path(StateDir))
}
