package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// What Strata's setup does to the companion's config, one finding each;
// nothing for a config as the companion left it, or a GPU placement the
// settings chose themselves.
func TestRewrittenFindings(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) *strataconfig.Config {
		p := filepath.Join(dir, "strata-t.json")
		os.WriteFile(p, []byte(body), 0o644)
		c, err := strataconfig.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ours := write(`{"exe": "e", "host": "0.0.0.0", "api_key": "k", "port": 8095, "vision": {"exe": "/opt/c/strata-vision-relay", "gpu": false}}`)
	before := keysOf(ours)
	cpu := &settings.Settings{Vision: settings.PlacementCPU}
	if f := Rewritten(ours, cpu, before); len(f) != 0 {
		t.Errorf("the companion's own config: %v", f)
	}
	theirs := write(`{"exe": "e", "port": 8080, "vision": {"exe": "engine/strata-vision", "gpu": true}}`)
	f := strings.Join(Rewritten(theirs, cpu, before), "\n")
	for _, want := range []string{"relay was replaced by engine/strata-vision", "host went from 0.0.0.0 to 127.0.0.1", "api_key was dropped", "port went from 8095 to 8080"} {
		if !strings.Contains(f, want) {
			t.Errorf("missing %q in:\n%s", want, f)
		}
	}
	if strings.Contains(f, `"k"`) {
		t.Error("the key's value is in the findings")
	}
	if f := Rewritten(theirs, &settings.Settings{Vision: settings.PlacementGPU}, keysOf(theirs)); len(f) != 0 {
		t.Errorf("a GPU placement the settings chose: %v", f)
	}
}
