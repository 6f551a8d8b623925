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

// Issue 32, High, at the supervisor: a root-owned install whose config
// another account may change (it names the engine, the encoder, the env
// Strata gets) never starts as root: refused, naming the config.
func TestRootDoesNotRunAConfigOthersCanChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the rule is about a privileged service")
	}
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { os.Chown(c.ConfigPath, 65534, 65534) })
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "belongs to nobody") || !strings.Contains(f.Message, ".json") {
		t.Errorf("the refusal: %q", f.Message)
	}
	if n := h.count(events.ServerStarting); n != 0 {
		t.Errorf("%d starts of a server whose config nobody may change", n)
	}
	if _, err := os.Stat(h.args); err == nil {
		t.Error("the stand-in ran")
	}
}
