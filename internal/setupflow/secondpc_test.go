package setupflow_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func TestRemoteFailures(t *testing.T) {
	for _, step := range []string{"remote-probe", "pair", "prepare"} {
		t.Run(step, func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			f := newFlow(t, w, setupflow.Options{})
			driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
			f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20"})
			w.Fail[step] = errors.New("no route to host")
			_, err := f.SecondPC.Probe(ctx, nil)
			if err == nil {
				_, err = f.SecondPC.Pair(ctx, nil)
			}
			if err == nil {
				err = f.SecondPC.Prepare(ctx, nil)
			}
			if err == nil || !strings.Contains(err.Error(), "no route") {
				t.Fatalf("err %v", err)
			}
			if _, err := f.Next(); err == nil {
				t.Error("Next after a failure")
			}
			// Back to Placement and choose the CPU instead.
			must(f.Back()).ok(t)
			f.Choice.Choose(settings.PlacementCPU, nil)
			next(t, f, setupflow.PageReview)
		})
	}
}

func TestHostKeyRejected(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f, _ := setupflow.New(ctx, w.Deps(no), setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20"})
	if _, err := f.SecondPC.Probe(ctx, nil); !errors.Is(err, setupflow.ErrHostKeyRejected) {
		t.Fatalf("err %v", err)
	}
}

// The second-PC page's idle stop and CPU fallback reach the settings at
// Apply (and the Review says them); the MAC pairing found shows as the
// Wake-on-LAN state.
func TestSecondPCOptionsAreApplied(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	if o := f.SecondPC.Options(); o.IdleStopS != setupflow.DefaultIdleStopS || o.FallbackCPU {
		t.Errorf("a new machine starts with %+v", o)
	}
	if wk := f.SecondPC.Wake(); wk.MAC != "" || wk.Paired || !strings.Contains(wk.Describe(), "Not set up yet: pairing records") {
		t.Errorf("wake before pairing: %+v %q", wk, wk.Describe())
	}
	// Paired, but no card found: says so and how to record one.
	if d := (setupflow.WakeState{Paired: true}).Describe(); !strings.Contains(d, "pairing found no network card") {
		t.Errorf("paired without a MAC: %q", d)
	}
	driveTo(t, f, setupflow.PageReview, settings.PlacementRemote)
	if wk := f.SecondPC.Wake(); wk.MAC != demo.DemoMAC || wk.Enabled || !strings.Contains(wk.Describe(), demo.DemoMAC) {
		t.Errorf("wake after pairing: %+v %q", wk, wk.Describe())
	}
	if err := f.SecondPC.SetOptions(setupflow.SecondPCOptions{IdleStopS: -1}); err == nil {
		t.Error("a negative idle stop was taken")
	}
	if err := f.SecondPC.SetOptions(setupflow.SecondPCOptions{IdleStopS: 90, FallbackCPU: true}); err != nil {
		t.Fatal(err)
	}
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if !strings.Contains(rv.Summary, "stops after 1m30s") || !strings.Contains(rv.Summary, "this PC's CPU") {
		t.Errorf("review summary: %q", rv.Summary)
	}
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s := w.Settings
	if s.Remote == nil || s.Remote.IdleStopS != 90 || s.FallbackCPU == nil || !*s.FallbackCPU || s.Remote.MAC != demo.DemoMAC {
		t.Fatalf("settings saved: %+v remote %+v", s, s.Remote)
	}

	// The next run starts from what was saved; "keep running" and no
	// fallback are saved as such.
	g := newFlow(t, w, setupflow.Options{})
	if o := g.SecondPC.Options(); o.IdleStopS != 90 || !o.FallbackCPU {
		t.Errorf("second run starts with %+v", o)
	}
	g.SecondPC.SetOptions(setupflow.SecondPCOptions{})
	must(g.Choice.Probe(ctx, nil)).ok(t)
	next(t, g, setupflow.PageSecondPC)
	next(t, g, setupflow.PageReview)
	rv = must(g.Apply.PlanReview(ctx)).ok(t)
	if !strings.Contains(rv.Summary, "keeps running") || !strings.Contains(rv.Summary, "fails with the reason") {
		t.Errorf("review summary: %q", rv.Summary)
	}
	next(t, g, setupflow.PageApply)
	if err := g.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if s := w.Settings; s.Remote.IdleStopS != 0 || s.FallbackCPU == nil || *s.FallbackCPU {
		t.Errorf("settings saved: %+v remote %+v", s, s.Remote)
	}
}

// Another address forgets the probe, and a pairing made before this run
// (the settings'); a pairing made in this run stays, so Cancel removes it.
func TestNewAddressForgetsWhatWasNotPairedHere(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementRemote,
		Remote: &settings.Remote{Host: "192.168.1.20", User: "sam", HostKey: "ssh-ed25519 AAAA", RemoteDir: "/home/sam/sv"}}
	f := newFlow(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	if _, paired, prepared := f.SecondPC.State(); !paired || !prepared {
		t.Fatalf("the settings' second PC: paired %t prepared %t", paired, prepared)
	}
	if got := f.SecondPC.Target().String(); got != "sam@192.168.1.20" {
		t.Errorf("target %q", got)
	}
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "192.168.1.30", User: "sam"})
	if _, paired, _ := f.SecondPC.State(); paired {
		t.Error("the settings' pairing stayed for another PC")
	}
	if err := f.CanNext(); err == nil {
		t.Error("Next with the other PC not paired")
	}

	w = demo.NewWorld("/opt/strata")
	f = newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20", Password: "hunter2"})
	must(f.SecondPC.Probe(ctx, nil)).ok(t)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20"}) // the same PC
	if f.SecondPC.Report() == nil {
		t.Error("the probe was forgotten for the same address")
	}
	must(f.SecondPC.Pair(ctx, nil)).ok(t)
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.30"})
	if f.SecondPC.Report() != nil {
		t.Error("the probe was kept for another address")
	}
	if _, paired, prepared := f.SecondPC.State(); !paired || prepared {
		t.Errorf("the pairing made here: paired %t prepared %t", paired, prepared)
	}
	if res := f.Cancel(); !strings.Contains(strings.Join(res.Messages, " "), "removed again") || w.Paired {
		t.Errorf("Cancel left the key there: %v", res.Messages)
	}
}
