//go:build !windows

package supervisor

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
)

// With the backstop poll an hour away, lines reach the bus only through
// change notification: the idle service wakes for nothing else.
func TestEngineLogFollowedByNotification(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { c.FollowEvery = time.Hour })
	h.waitFor(events.ServerReady)
	h.waitEngineLogCache()
	f, err := os.OpenFile(h.root.Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "strata-vision: on the CPU, 3 threads, no warm-up")
	if e := h.waitFor(events.EncoderReady); events.Get[events.EncoderReadyDetails](e).Threads != 3 {
		t.Errorf("encoder event %+v", e)
	}
	// Truncated (Strata starts a new log): read from the start again.
	if err := os.Truncate(h.root.Log, 0); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "strata-vision: on the CPU, 5 threads, no warm-up")
	if e := h.waitFor(events.EncoderReady); events.Get[events.EncoderReadyDetails](e).Threads != 5 {
		t.Errorf("after truncation: %+v", e)
	}
}

// The config is parsed again only when it changed.
func TestConfigParsedOnlyWhenChanged(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { c.FollowEvery = time.Hour })
	h.waitFor(events.ServerReady)
	f := newLogFollow()
	h.sup.logRound(f)
	if !f.cfgRead || f.path == "" {
		t.Fatalf("first round did not read the config: %+v", f)
	}
	// A round with the config's size and time unchanged must not re-parse
	// it: a re-parse would put the config's log path back over this marker.
	st, _ := os.Stat(h.root.Config)
	b, _ := os.ReadFile(h.root.Config)
	old := f.path
	f.path = old + ".sentinel"
	h.sup.logRound(f)
	if f.path != old+".sentinel" {
		t.Fatal("an unchanged config was parsed again")
	}
	os.WriteFile(h.root.Config, append(b, ' '), 0o644)
	os.Chtimes(h.root.Config, st.ModTime(), st.ModTime().Add(time.Second))
	h.sup.logRound(f)
	if f.path != old {
		t.Fatalf("a changed config was not parsed again: %q", f.path)
	}
}
