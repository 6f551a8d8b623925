package supervisor

import (
	"os"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
)

// H5 at the supervisor: a root service does not start Strata from a folder
// every account may change; it fails at once saying why and what to do,
// and nothing of the install ran.
func TestRootDoesNotRunAFolderOthersCanChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the rule is about a privileged service")
	}
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { os.Chmod(c.StrataRoot, 0o777) })
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "every account may change "+h.root.Dir) || !strings.Contains(f.Message, "chown") {
		t.Errorf("the refusal: %q", f.Message)
	}
	if n := h.count(events.ServerStarting); n != 0 {
		t.Errorf("%d starts of a server from a world-writable folder", n)
	}
	if _, err := os.Stat(h.args); err == nil {
		t.Error("the stand-in ran")
	}
}
