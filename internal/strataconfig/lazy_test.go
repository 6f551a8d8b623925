package strataconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLazyWithVisionIsAProblem: a config with lazy loading and a vision
// block is one Strata refuses to start (exit 2), so it is not valid; the
// problem says why and how to fix it, and does not keep a vision change
// from fixing it (EditErr).
func TestLazyWithVisionIsAProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "strata-x.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, text string
		problem    bool
	}{
		{"lazy_load with vision", `{"lazy_load": true, "vision": {"mmproj": "m", "model": "v"}}`, true},
		{"--lazy with vision", `{"args": ["--lazy"], "vision": {"mmproj": "m", "model": "v"}}`, true},
		{"lazy without vision", `{"lazy_load": true}`, false},
		{"vision without lazy", `{"lazy_load": false, "vision": {"mmproj": "m", "model": "v"}}`, false},
	}
	for _, c := range cases {
		cfg, err := fromBytes(write(c.text), []byte(c.text))
		if err != nil {
			t.Fatal(err)
		}
		var lazy *Problem
		for i, p := range cfg.Problems {
			if p.Key == LazyKey {
				lazy = &cfg.Problems[i]
			}
		}
		if (lazy != nil) != c.problem {
			t.Errorf("%s: lazy problem %v, want %v", c.name, lazy, c.problem)
			continue
		}
		if lazy == nil {
			continue
		}
		for _, w := range []string{"lazy loading is text-only", "vision off", "turns lazy loading off"} {
			if !strings.Contains(lazy.String(), w) {
				t.Errorf("%s: %q does not say %q", c.name, lazy, w)
			}
		}
		if cfg.Err() == nil || cfg.EditErr() != nil {
			t.Errorf("%s: Err %v, EditErr %v", c.name, cfg.Err(), cfg.EditErr())
		}
	}
}
