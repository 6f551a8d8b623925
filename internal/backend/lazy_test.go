package backend

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// setLazy puts "lazy_load": true into the config, as a person editing it by
// hand would.
func setLazy(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"lazy_load": false`)) {
		b = bytes.Replace(b, []byte(`"lazy_load": false`), []byte(`"lazy_load": true`), 1)
	} else {
		b = bytes.Replace(b, []byte("{"), []byte("{\n  \"lazy_load\": true,"), 1)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := strataconfig.Read(path)
	if err != nil || !c.LazyWithVision() {
		t.Fatalf("the fixture is not lazy with vision: %v %+v", err, c)
	}
}

// TestLazyLoadingWithVisionIsDealtWith: Strata refuses lazy loading with a
// vision block (exit 2); with the relay in the config a move among the
// relay's placements used to change only the settings and say "nothing to
// change", leaving a config Strata cannot start. Now turning pictures on
// turns lazy loading off (in the diff, with a note, and a restart), and
// turning them off takes the vision block out so lazy loading works.
func TestLazyLoadingWithVisionIsDealtWith(t *testing.T) {
	f := newFixture(t)
	f.set(t, "remote") // the relay in the config
	setLazy(t, f.in.Config)

	dry := f.set(t, "remote", func(r *controlapi.VisionRequest) { r.DryRun = true })
	if strings.Contains(dry.Message, "nothing to change") || !dry.RestartNeeded || !strings.Contains(dry.Diff, `"lazy_load": false`) ||
		!strings.Contains(strings.Join(dry.Notes, " "), "lazy") {
		t.Fatalf("vision remote --dry-run on a lazy config: %+v", dry)
	}
	res := f.set(t, "cpu")
	if !res.ConfigWritten || !res.RestartNeeded {
		t.Fatalf("vision cpu on a lazy config: %+v", res)
	}
	c, _ := strataconfig.Read(f.in.Config)
	if c.LazyWithVision() || !c.NamesRelay() || c.Err() != nil {
		t.Fatalf("after vision cpu: lazy %v relay %v problems %v", c.Lazy, c.NamesRelay(), c.Problems)
	}

	// Off: the vision block goes, lazy loading stays.
	setLazy(t, f.in.Config)
	res = f.set(t, "off")
	if !res.ConfigWritten || !res.RestartNeeded {
		t.Fatalf("vision off on a lazy config: %+v", res)
	}
	c, _ = strataconfig.Read(f.in.Config)
	if c.Vision != nil || !c.Lazy || c.Err() != nil {
		t.Fatalf("after vision off: vision %v lazy %v problems %v", c.Vision, c.Lazy, c.Problems)
	}
	f.agree(t, "off")
}

// TestLazyConfigStillRefusesOtherProblems: the lazy problem does not hide
// one an edit cannot fix.
func TestLazyConfigStillRefusesOtherProblems(t *testing.T) {
	f := newFixture(t)
	setLazy(t, f.in.Config)
	b, _ := os.ReadFile(f.in.Config)
	os.WriteFile(f.in.Config, bytes.Replace(b, []byte(`"port": 8095`), []byte(`"port": "eighty"`), 1), 0o644)
	_, err := f.b.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu"})
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Fatalf("a config with a bad port too: %v", err)
	}
}
