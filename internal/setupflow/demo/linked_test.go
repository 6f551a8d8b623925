package demo_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The demo machine is linked only into a wizard built with -tags demo (the
// screenshots); the shipped strata-setup has neither it nor the tray's
// app/desktop. `go list` reads the import graph without compiling.
func TestNotLinkedIntoTheShippedWizard(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	deps := func(args ...string) string {
		out, err := exec.Command(goBin, append(append([]string{"list"}, args...), "-deps", "github.com/strata-companion/companion/wizard")...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return string(out)
	}
	const demoPkg = "github.com/strata-companion/companion/internal/setupflow/demo\n"
	shipped := deps()
	for _, p := range []string{demoPkg, "github.com/strata-companion/companion/app/desktop\n"} {
		if strings.Contains(shipped, p) {
			t.Errorf("the shipped wizard links %s", strings.TrimSpace(p))
		}
	}
	if !strings.Contains(deps("-tags", "demo"), demoPkg) {
		t.Error("the demo build does not link the demo machine (make screenshots would have nothing to show)")
	}
}
