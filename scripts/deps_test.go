package scripts

import (
	"os/exec"
	"strings"
	"testing"
)

// What only the tests and the Windows builds need: `make run` on a home PC
// must not install (and so start) any of it.
var testOnly = []string{"wine", "wine64", "nsis", "7zip", "openssh-server", "systemd-container", "xvfb", "gcc-mingw-w64-x86-64"}

func needs(t *testing.T, set string) []string {
	t.Helper()
	out, err := exec.Command("bash", "install-deps.sh", "--list", set).CombinedOutput()
	if err != nil {
		t.Fatalf("install-deps.sh --list %s: %v\n%s", set, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "install-deps.sh "+set+" needs: "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("install-deps.sh --list %s printed no package list:\n%s", set, out)
	return nil
}

func TestRunInstallsOnlyWhatRunningNeeds(t *testing.T) {
	run, all := needs(t, "run"), needs(t, "test")
	in := func(list []string, p string) bool {
		for _, q := range list {
			if q == p {
				return true
			}
		}
		return false
	}
	for _, p := range testOnly {
		if in(run, p) {
			t.Errorf("the run set installs %s, which only the tests need", p)
		}
		if !in(all, p) {
			t.Errorf("the test set lacks %s", p)
		}
	}
	for _, p := range run {
		if !in(all, p) {
			t.Errorf("the test set lacks %s from the run set", p)
		}
	}
	for _, p := range []string{"gcc", "libgl1-mesa-dev", "libgtk-3-dev", "libayatana-appindicator3-dev"} {
		if !in(run, p) {
			t.Errorf("the run set lacks %s (the cgo programs need it)", p)
		}
	}
}

// `make run` asks for the run set only, `make test` for the test set.
func TestMakeTargetsAskForTheirSet(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for target, want := range map[string]string{"run": "install-deps.sh run", "test": "install-deps.sh test"} {
		out, err := exec.Command("make", "-C", "..", "-n", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		s := string(out)
		if !strings.Contains(s, want) {
			t.Errorf("make %s does not run %q:\n%s", target, want, s)
		}
		if target == "run" && strings.Contains(s, "install-deps.sh test") {
			t.Errorf("make run installs the test set")
		}
	}
}
