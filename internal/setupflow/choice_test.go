package setupflow_test

import (
	"errors"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func TestProbeFailureStillOffersCPU(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Fail["probe"] = errors.New("nvidia-smi: couldn't communicate with the NVIDIA driver")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageThisPC, "")
	m, err := f.Choice.Probe(ctx, nil)
	if err == nil || len(m.Warnings) == 0 {
		t.Fatalf("probe: %v %+v", err, m)
	}
	next(t, f, setupflow.PagePlacement)
	if err := f.Choice.Choose(settings.PlacementGPU, nil); err == nil {
		t.Error("GPU chosen with no GPU found")
	}
	if f.Choice.Current().Placement != settings.PlacementCPU {
		t.Errorf("preselected %s", f.Choice.Current().Placement)
	}
}

// The second PC's probe goes into the recommendation; naming another PC
// drops it from the next probe of this PC.
func TestSecondPCProbeInformsTheRecommendation(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	estimate := func() float64 {
		o, ok := f.Choice.Recommendation().Option(settings.PlacementRemote)
		if !ok {
			t.Fatal("no second-PC option")
		}
		return o.PictureSeconds
	}
	before := estimate()
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20"})
	rep := must(f.SecondPC.Probe(ctx, nil)).ok(t)
	if got := estimate(); got == before || got != rep.PictureSeconds {
		t.Errorf("estimate %.2f s before the probe, %.2f s after, the report says %.2f s", before, got, rep.PictureSeconds)
	}
	if f.Choice.Recommendation().Best != settings.PlacementRemote {
		t.Errorf("recommended %s with a probed second PC", f.Choice.Recommendation().Best)
	}
	must(f.Back()).ok(t)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.30"})
	if f.SecondPC.Report() != nil {
		t.Error("the probe of another PC was kept")
	}
	must(f.Choice.Probe(ctx, nil)).ok(t)
	if got := estimate(); got != before {
		t.Errorf("estimate %.2f s after naming another PC, want the unprobed %.2f s", got, before)
	}
}
