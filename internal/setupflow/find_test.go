package setupflow_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// Search selects the first install that runs, with the config its run
// script names; the user's picks are checked against what was found.
func TestFindSelectsTheInstallThatRuns(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	next(t, f, setupflow.PageFindStrata)
	found := must(f.Find.Search(ctx)).ok(t)
	if len(found) != 2 {
		t.Fatalf("found %d installs", len(found))
	}
	in, cfg, ok := f.Find.Selected()
	if !ok || in.Root != "/opt/strata" || cfg != w.Config {
		t.Fatalf("selected %q %q %t", in.Root, cfg, ok)
	}
	other := filepath.Join("/opt/strata", "strata-coder-iq1_m.json")
	if err := f.Find.SelectConfig(other); err != nil {
		t.Fatal(err)
	}
	if _, cfg, _ := f.Find.Selected(); cfg != other {
		t.Errorf("config %q after choosing %q", cfg, other)
	}
	if err := f.Find.SelectConfig("/elsewhere/strata-x.json"); err == nil || !strings.Contains(err.Error(), "is not one of the configs of /opt/strata") {
		t.Errorf("a config of no install: %v", err)
	}
	if err := f.Find.SelectInstall(2); err == nil {
		t.Error("install number 3 of 2 was selected")
	}
	// Browsing to an install already found selects it again, once.
	must(f.Find.Browse(ctx, "/opt/strata/")).ok(t)
	if n := len(f.Find.Installs()); n != 2 {
		t.Errorf("%d installs after browsing to one found", n)
	}
	if _, cfg, _ := f.Find.Selected(); cfg != w.Config {
		t.Errorf("browsing did not select the install's config in use: %q", cfg)
	}
	if _, err := f.Find.Browse(ctx, "  "); err == nil {
		t.Error("Browse with no folder")
	}
	next(t, f, setupflow.PageThisPC)
	if _, err := f.Find.Search(ctx); err == nil {
		t.Error("a search for Strata from the This PC page")
	}
}

func TestFindFailureKeepsThePageOpen(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Fail["find"] = errors.New("no Strata install was found")
	f := newFlow(t, w, setupflow.Options{})
	next(t, f, setupflow.PageFindStrata)
	if _, err := f.Find.Search(ctx); err == nil {
		t.Fatal("Search did not fail")
	}
	if len(f.Find.Installs()) != 0 {
		t.Error("installs after a failed search")
	}
	if err := f.CanNext(); err == nil || !strings.Contains(err.Error(), "Browse") {
		t.Errorf("Next without an install: %v", err)
	}
	must(f.Find.Browse(ctx, "/opt/strata")).ok(t)
	next(t, f, setupflow.PageThisPC)
}
