package live_test

import (
	"testing"

	"github.com/strata-companion/companion/internal/setupflow/live"
)

// The command line an elevated run gets on Windows: every argument quoted
// (a path or an account with spaces), the output and then the end line to
// the run's file, all inside the one pair of quotes cmd /c strips.
func TestCmdLine(t *testing.T) {
	got := live.CmdLine([]string{`C:\Program Files\Strata Companion\strata-service.exe`, "lend", "--foreground", "--user", `PC\Sam Smith`}, `C:\Users\Sam Smith\AppData\Local\strata-companion\lend.log`)
	want := `/d /c ""C:\Program Files\Strata Companion\strata-service.exe" "lend" "--foreground" "--user" "PC\Sam Smith" >"C:\Users\Sam Smith\AppData\Local\strata-companion\lend.log" 2>&1 && echo strata-companion-run-ended 0 >>"C:\Users\Sam Smith\AppData\Local\strata-companion\lend.log" || echo strata-companion-run-ended 1 >>"C:\Users\Sam Smith\AppData\Local\strata-companion\lend.log""`
	if got != want {
		t.Errorf("cmd line\n%s\nwant\n%s", got, want)
	}
}
