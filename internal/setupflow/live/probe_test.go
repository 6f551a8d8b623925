package live_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/setupflow/live"
)

// A PC with a spare second GPU: the real probe (through a fake nvidia-smi)
// recommends that GPU, the flow preselects it with its index, and the real
// planner writes vision.cuda_device.
func TestSpareGPUFromTheRealProbe(t *testing.T) {
	dir := t.TempDir()
	smi := filepath.Join(dir, "nvidia-smi")
	os.WriteFile(smi, []byte("#!/bin/sh\necho '0, NVIDIA GeForce RTX 4080, 16376, 14100, 2276, 581.57, 8.9, Enabled'\necho '1, NVIDIA GeForce RTX 3060, 12288, 310, 11978, 581.57, 8.6, Disabled'\n"), 0o755)
	root, err := demo.MakeInstall(filepath.Join(dir, "Strata"))
	if err != nil {
		t.Fatal(err)
	}
	w := demo.NewWorld(root)
	d := w.Deps(nil)
	pr := &live.Prober{Options: probe.Options{NvidiaSMIPath: smi, SearchPaths: []string{}}}
	d.Prober = pr
	d.Config = live.Planner{SettingsPath: filepath.Join(dir, "settings.json"), Prober: pr}
	ctx := context.Background()
	f, _ := setupflow.New(ctx, d, setupflow.Options{})
	f.Next()
	f.Find.Search(ctx)
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	m, err := f.Choice.Probe(ctx, nil)
	if err != nil || len(m.GPUs) != 2 || m.GPUs[1].FreeMiB != 11978 {
		t.Fatalf("machine %+v %v", m, err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	rec := f.Choice.Recommendation()
	c := f.Choice.Current()
	if c.Placement != settings.PlacementGPU || c.Device == nil || *c.Device != 1 {
		t.Fatalf("preselected %+v (recommendation %s %v: %s)", c, rec.Best, rec.BestDevice, rec.Reason)
	}
	var spare *setupflow.Option
	for i, o := range rec.Options {
		if o.Device != nil {
			spare = &rec.Options[i]
		}
	}
	if spare == nil || !rec.IsBest(*spare) || !strings.Contains(spare.Label, "spare GPU 1") || spare.PictureSeconds <= 0 {
		t.Fatalf("options %+v", rec.Options)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	rv, err := f.Apply.PlanReview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rv.Diff, `"cuda_device": 1`) {
		t.Errorf("diff:\n%s", rv.Diff)
	}
}

// Issue 40: once the CPU was measured, the Pictures page's reason quotes
// the measured figure, not the CPU's estimate beside it, and the CPU option
// says its measured figure; the choice stays the probe's.
func TestTheReasonQuotesTheMeasuredFigure(t *testing.T) {
	dir := t.TempDir()
	smi := filepath.Join(dir, "nvidia-smi")
	os.WriteFile(smi, []byte("#!/bin/sh\necho '0, NVIDIA GeForce RTX 4080, 16376, 14100, 2276, 581.57, 8.9, Enabled'\n"), 0o755)
	root, err := demo.MakeInstall(filepath.Join(dir, "Strata"))
	if err != nil {
		t.Fatal(err)
	}
	w := demo.NewWorld(root)
	d := w.Deps(nil)
	pr := &live.Prober{Options: probe.Options{NvidiaSMIPath: smi, SearchPaths: []string{}}}
	d.Prober = pr
	ctx := context.Background()
	f, _ := setupflow.New(ctx, d, setupflow.Options{})
	f.Next()
	f.Find.Search(ctx)
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Choice.Probe(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	before := f.Choice.Recommendation()
	if !strings.Contains(before.Reason, "on the CPU") {
		t.Fatalf("the reason quotes no CPU figure to replace: %q", before.Reason)
	}
	tr, err := f.Measure.Run(ctx, settings.PlacementCPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.Choice.Recommendation()
	got := settings.Secs(tr.PictureS) + " measured here on the CPU"
	if !strings.Contains(rec.Reason, got) || rec.Best != before.Best {
		t.Errorf("after the CPU trial the reason is %q (want %q in it; best %s, was %s)", rec.Reason, got, rec.Best, before.Best)
	}
	o, _ := rec.Option(settings.PlacementCPU)
	if w := strings.Join(o.Figures(), ", "); !strings.HasPrefix(w, settings.Secs(tr.PictureS)+" per picture, measured here") {
		t.Errorf("the CPU option says %q", w)
	}
}
