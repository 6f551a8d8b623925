package setupflow_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// A trial is shown, recommended from, said in the Review and kept in the
// settings at Apply.
func TestTrialIsShownReviewedAndKept(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PagePlacement, settings.PlacementGPU)
	if !f.Measure.Available() {
		t.Fatal("the demo's measurer is not offered")
	}
	if _, err := f.Measure.Run(ctx, settings.PlacementOff, nil); err == nil {
		t.Error("a trial with pictures off")
	}
	tr := must(f.Measure.Run(ctx, settings.PlacementGPU, nil)).ok(t)
	if tr.PictureS != demo.Trials[settings.PlacementGPU].PictureS {
		t.Errorf("trial %+v", tr)
	}
	if trials, errs := f.Measure.Trials(); trials[settings.PlacementGPU] != tr || len(errs) != 0 {
		t.Errorf("trials %v errors %v", trials, errs)
	}
	if _, why, _ := f.Measure.Advice(); why == "" {
		t.Error("no advice from a measured trial")
	}
	next(t, f, setupflow.PageReview)
	if _, err := f.Measure.Run(ctx, settings.PlacementGPU, nil); err == nil {
		t.Error("a trial from the Review page")
	}
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if !strings.Contains(rv.Summary, "per picture, measured here") {
		t.Errorf("summary %q", rv.Summary)
	}
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if m := w.Settings.LastMeasured(settings.PlacementGPU); m == nil || m.PictureS != tr.PictureS {
		t.Errorf("settings keep %+v", m)
	}
}

// A trial on the second PC before it is paired fails for that reason; once
// it is paired and prepared the failure is no longer shown, and a trial
// reads on the PC prepared in this run.
func TestSecondPCTrialAfterPreparing(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PagePlacement, settings.PlacementRemote)
	if err := f.Choice.Choose(settings.PlacementRemote, nil); err != nil {
		t.Fatal(err)
	}
	_, err := f.Measure.Run(ctx, settings.PlacementRemote, nil)
	if measure.KindOf(err) != measure.KindNotPaired {
		t.Fatalf("a trial before pairing: %v", err)
	}
	if _, errs := f.Measure.Trials(); errs[settings.PlacementRemote] == nil {
		t.Error("the failure is not shown")
	}
	next(t, f, setupflow.PageSecondPC)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20", Password: "hunter2"})
	must(f.SecondPC.Probe(ctx, nil)).ok(t)
	must(f.SecondPC.Pair(ctx, nil)).ok(t)
	if err := f.SecondPC.Prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, errs := f.Measure.Trials(); errs[settings.PlacementRemote] != nil {
		t.Errorf("the failure from before pairing is still shown: %v", errs[settings.PlacementRemote])
	}
	must(f.Measure.Run(ctx, settings.PlacementRemote, nil)).ok(t)
	if !slices.Contains(w.Calls(), "measure remote on 192.168.1.20") {
		t.Errorf("the trial did not read on the PC prepared here: %v", w.Calls())
	}
}

func TestNoMeasurerNoTrials(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	d := w.Deps(yes)
	d.Measurer = nil
	f, err := setupflow.New(ctx, d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	driveTo(t, f, setupflow.PagePlacement, settings.PlacementGPU)
	if f.Measure.Available() {
		t.Error("trials offered without a measurer")
	}
	if _, err := f.Measure.Run(ctx, settings.PlacementGPU, nil); !errors.Is(err, setupflow.ErrNoMeasurer) {
		t.Errorf("a trial without a measurer: %v", err)
	}
}
