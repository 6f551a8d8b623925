//go:build linux

package desktop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

// The Windows administrator prompt's path under wine (which runs "runas"
// without asking): strata-service beside the program, in a folder with a
// space, started through ShellExecuteExW on a hidden cmd.exe; its exit code
// and its words come back (through the file it writes them to), and the
// file is gone afterwards. A declined prompt is not playable under wine.
func TestRunElevatedUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts wine")
	}
	w := testenv.WineFor(t, nil)
	dir := w.Drive(`Program Files\Strata Companion`)
	testenv.Copy(t, w.Build(t, "github.com/strata-companion/companion/app/desktop/internal/elevprobe"), filepath.Join(dir, "elevprobe.exe"), 0o755)
	testenv.Copy(t, w.Build(t, "github.com/strata-companion/companion/app/desktop/internal/servicestandin"), filepath.Join(dir, "strata-service.exe"), 0o755)
	probe := `C:\Program Files\Strata Companion\elevprobe.exe`

	out, _ := w.Run(probe, "lend", "ok", `C:\Program Files\Strata Companion\ran.txt`)
	if b, err := os.ReadFile(filepath.Join(dir, "ran.txt")); !strings.Contains(out, "answer: <nil>") || err != nil || string(b) != "ran elevated\n" {
		t.Errorf("a command that ends well: %q, its file %q (%v)", out, b, err)
	}
	out, _ = w.Run(probe, "lend", "code")
	if !strings.Contains(out, "answer: this PC is not lending its GPU\n") {
		t.Errorf("a command that fails: %q, want its own words", out)
	}
	_, temp, ok := strings.Cut(out, "temp: C:\\")
	if !ok {
		t.Fatalf("the probe named no temp folder: %q", out)
	}
	temp = w.Drive(strings.TrimSpace(temp))
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the user's temp folder under wine: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(temp, "strata-tray-*")); len(left) > 0 {
		t.Errorf("the output files stay behind: %v", left)
	}
}
