package setupflow_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func TestGPUChoiceUnchangedConfigIsNotWritten(t *testing.T) {
	w := demo.NewWorld("/opt/strata") // the canned config already has GPU vision
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageReview, settings.PlacementGPU)
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if rv.Diff != "" {
		t.Errorf("diff for no change:\n%s", rv.Diff)
	}
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Calls() {
		if strings.HasPrefix(c, "write") {
			t.Errorf("an unchanged config was written: %v", w.Calls())
		}
	}
}

func TestApplyFailuresRollBack(t *testing.T) {
	cases := []struct {
		fail        string
		running     bool // the service ran before
		installed   bool
		wantBack    []string // substrings of the rolled-back list
		wantNoWrite bool
	}{
		{fail: "install", wantNoWrite: true},
		{fail: "write", wantBack: []string{"service installed a moment ago was removed"}},
		{fail: "settings", wantBack: []string{"Strata config", "service installed"}},
		{fail: "start", wantBack: []string{"Strata config", "companion settings", "service installed"}},
		{fail: "follow", wantBack: []string{"Strata config", "companion settings", "service installed"}},
		{fail: "follow", installed: true, running: true, wantBack: []string{"Strata config", "companion settings", "restarted with the old config"}},
	}
	for _, c := range cases {
		t.Run(c.fail, func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			w.Installed, w.Running = c.installed, c.running
			before := snap(w)
			f := newFlow(t, w, setupflow.Options{})
			driveTo(t, f, setupflow.PageApply, settings.PlacementCPU)
			w.Fail[c.fail] = errors.New("boom: " + c.fail)
			err := f.Apply.Run(ctx, nil)
			var ae *setupflow.ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("Apply: %v", err)
			}
			if ae.RollbackErr != nil {
				t.Errorf("rollback failed: %v", ae.RollbackErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, "boom: "+c.fail) {
				t.Errorf("the error hides the cause: %s", msg)
			}
			for _, s := range c.wantBack {
				if !strings.Contains(strings.Join(ae.RolledBack, "; "), s) {
					t.Errorf("rolled back %q, want one saying %q", ae.RolledBack, s)
				}
			}
			if c.wantNoWrite && !strings.Contains(msg, "Nothing was changed") {
				t.Errorf("message: %s", msg)
			}
			after := snap(w)
			after.run = after.run && c.running // a restart with the old config is "as before"
			if after != before {
				t.Errorf("after the rollback: %+v, before %+v", after, before)
			}
			if _, err := f.Next(); err == nil {
				t.Error("Next to Done after a failed Apply")
			}
			// Back to Review, fix, apply again: the flow recovers.
			if p := must(f.Back()).ok(t); p != setupflow.PageReview {
				t.Fatalf("Back went to %s", p)
			}
			delete(w.Fail, c.fail)
			must(f.Apply.PlanReview(ctx)).ok(t)
			next(t, f, setupflow.PageApply)
			if err := f.Apply.Run(ctx, nil); err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			next(t, f, setupflow.PageDone)
		})
	}
}

func TestConfigChangedSinceReviewIsNotWritten(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageApply, settings.PlacementOff)
	w.ConfigText += " " // someone edited the file meanwhile
	before := w.ConfigText
	err := f.Apply.Run(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "changed since you reviewed it") {
		t.Fatalf("Apply: %v", err)
	}
	if w.ConfigText != before || w.Installed {
		t.Error("something was changed")
	}
}

func TestTrayAtLogin(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageReview, settings.PlacementGPU)
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if rv.TrayAtLogin {
		t.Error("start tray at login is on by default")
	}
	f.Apply.SetTrayAtLogin(true)
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !w.Login {
		t.Error("the ticked box was not applied")
	}
}

// A change in an earlier step after the Review was computed needs a new
// Review before Apply: the change reviewed is the one written.
func TestAChangeAfterReviewNeedsANewReview(t *testing.T) {
	changes := map[string]func(f *setupflow.Flow) error{
		"placement": func(f *setupflow.Flow) error { return f.Choice.Choose(settings.PlacementCPU, nil) },
		"config":    func(f *setupflow.Flow) error { return f.Find.SelectConfig("/opt/strata/strata-coder-iq1_m.json") },
		"options": func(f *setupflow.Flow) error {
			return f.SecondPC.SetOptions(setupflow.SecondPCOptions{IdleStopS: 60, FallbackCPU: true})
		},
		"target": func(f *setupflow.Flow) error {
			f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20", UseAgent: true})
			return nil
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			f := newFlow(t, w, setupflow.Options{})
			driveTo(t, f, setupflow.PageReview, settings.PlacementRemote)
			must(f.Apply.PlanReview(ctx)).ok(t)
			if err := f.CanNext(); err != nil {
				t.Fatal(err)
			}
			if err := change(f); err != nil {
				t.Fatal(err)
			}
			if err := f.CanNext(); err == nil || !strings.Contains(err.Error(), "wait for the change to be computed") {
				t.Errorf("Next after a change since the Review: %v", err)
			}
			must(f.Apply.PlanReview(ctx)).ok(t)
			next(t, f, setupflow.PageApply)
		})
	}
}
