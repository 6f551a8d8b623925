package live_test

import (
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/setupflow/live"
)

// The choice of where pictures are read says what Strata does: text waits
// while a picture is read (its request queue), and the relay keeps that wait
// as short as the picture; never that text is not slowed. Both the live flow
// and the demo.
func TestPictureChoicesSayTextWaits(t *testing.T) {
	check := func(name string, rec setupflow.Recommendation) {
		t.Helper()
		seen := map[settings.Placement]bool{}
		for _, o := range rec.Options {
			if strings.Contains(strings.ToLower(o.Note), "never slowed") {
				t.Errorf("%s %s: %q", name, o.Placement, o.Note)
			}
			if o.Placement == settings.PlacementRemote || o.Placement == settings.PlacementCPU {
				seen[o.Placement] = true
				if !strings.Contains(o.Note, setupflow.TextWaits) {
					t.Errorf("%s %s note does not say that text waits: %q", name, o.Placement, o.Note)
				}
			}
		}
		if !seen[settings.PlacementRemote] {
			t.Errorf("%s: no second-PC option: %+v", name, rec.Options)
		}
	}
	check("live, no second PC probed", live.ConvertRecommendation(probe.Recommendation{Placement: settings.PlacementGPU, Estimates: []probe.Estimate{
		{Placement: settings.PlacementGPU, Available: true, PictureSeconds: 1.63, Basis: "measured"},
		{Placement: settings.PlacementCPU, Available: true, PictureSeconds: 15.3, Basis: "8 threads"},
	}}, false))
	check("live, second PC probed", live.ConvertRecommendation(probe.Recommendation{Placement: settings.PlacementRemote, Estimates: []probe.Estimate{
		{Placement: settings.PlacementRemote, Available: true, PictureSeconds: 2.8, Basis: "RTX 3060, 2 ms away"},
		{Placement: settings.PlacementCPU, Available: true, PictureSeconds: 15.3},
	}}, true))
	check("demo", demo.Recommend(&setupflow.Machine{Threads: 16}, nil))
	check("demo, probed", demo.Recommend(&setupflow.Machine{Threads: 16}, &setupflow.RemoteReport{RTTms: 2, UpMBps: 100, DownMBps: 100}))
}
