//go:build linux

package testenv

import (
	"os"
	"strings"
	"testing"
)

// A display stopped at the end of its test takes its X socket (and lock, where
// it makes one) with it: nothing stays in /tmp.
func TestDisplayLeavesNoLockBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb")
	}
	var name string
	t.Run("display", func(t *testing.T) {
		d := StartDisplay(t, 320, 240)
		name = strings.TrimPrefix(d.Name, ":")
		home := ""
		for _, kv := range d.Env {
			if v, ok := strings.CutPrefix(kv, "HOME="); ok {
				home = v
			}
		}
		if real, _ := os.UserHomeDir(); home == "" || home == real || !strings.HasPrefix(home, d.RuntimeDir) {
			t.Errorf("programs on the display get HOME=%q, want a private one under %s", home, d.RuntimeDir)
		}
		if _, err := os.Stat("/tmp/.X11-unix/X" + name); err != nil {
			t.Fatalf("Xvfb %s runs but has no socket: %v", name, err)
		}
	})
	if name == "" {
		t.FailNow()
	}
	for _, p := range []string{"/tmp/.X" + name + "-lock", "/tmp/.X11-unix/X" + name} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there after the display stopped", p)
		}
	}
}
