package setupflow_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func hasCall(w *demo.World, prefix string) bool {
	return slices.ContainsFunc(w.Calls(), func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// Found on the network, paired by its code, then probed with the
// companion's own key and prepared as after a pairing by password, and
// written at Apply.
func TestPairByCodeWelcomeToDone(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	if !f.Code.Available() {
		t.Fatal("the demo machine's flow cannot pair by code")
	}
	if _, searched := f.Code.Found(); searched {
		t.Error("searched before Find")
	}
	found := must(f.Code.Find(ctx)).ok(t)
	if len(found) != 2 || found[0].Name != "gaming-laptop" || found[0].Paired {
		t.Fatalf("found %+v", found)
	}
	if d := found[0].Describe(); d != "gaming-laptop: NVIDIA GeForce RTX 3060 Laptop GPU, 6.0 GB VRAM at 192.168.1.20" {
		t.Errorf("described as %q", d)
	}
	if found[1].VRAM() != "12.0 GB VRAM" || found[1].GPUName() != "NVIDIA RTX A2000 12GB" {
		t.Errorf("office-pc: %q %q", found[1].GPUName(), found[1].VRAM())
	}
	// Typed as a person types it: lower case, a space.
	r := must(f.Code.Pair(ctx, found[0].Target(), " hxk4 9tqm", nil)).ok(t)
	if r.Host != "192.168.1.20" || r.User != "sam" {
		t.Fatalf("paired %+v", r)
	}
	want := "pair-code 192.168.1.20:7390 HXK4-9TQM hostkey=" + demo.HostKey.Fingerprint + " root=/opt/strata"
	if !slices.Contains(w.Calls(), want) {
		t.Errorf("calls %q, want %q", w.Calls(), want)
	}
	if _, paired, prepared := f.SecondPC.State(); !paired || prepared {
		t.Errorf("after the code: paired %t prepared %t", paired, prepared)
	}
	if list, _ := f.Code.Found(); !list[0].Paired || list[1].Paired {
		t.Errorf("the list does not mark the PC just paired: %+v", list)
	}
	if err := f.CanNext(); err == nil || !strings.Contains(err.Error(), "prepare") {
		t.Errorf("Next before Prepare: %v", err)
	}
	// The probe signs in with the companion's key: no host key question
	// (pairing pinned it).
	asked := w.HostKeyAsked
	rep := must(f.SecondPC.Probe(ctx, nil)).ok(t)
	if w.HostKeyAsked != asked || !hasCall(w, "remote-probe with the companion's key /etc/strata-companion/secrets/relay_ed25519") {
		t.Errorf("the probe after a pairing by code: asked %d more, calls %q", w.HostKeyAsked-asked, w.Calls())
	}
	if rep.GPUName() != "NVIDIA GeForce RTX 3060 Laptop GPU" {
		t.Errorf("report %+v", rep)
	}
	if err := f.SecondPC.Prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	next(t, f, setupflow.PageReview)
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if !strings.Contains(rv.Summary, "sam@192.168.1.20 (NVIDIA GeForce RTX 3060 Laptop GPU)") {
		t.Errorf("summary %q", rv.Summary)
	}
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if s := w.Settings; s.Vision != settings.PlacementRemote || s.Remote == nil || s.Remote.Host != "192.168.1.20" || s.Remote.RemoteDir == "" {
		t.Errorf("settings %+v remote %+v", s, s.Remote)
	}
	if hasCall(w, "unpair") {
		t.Error("unpaired after Apply")
	}
}

// A wrong code is refused in internal/lend's words (what to do: a new code
// on that PC); a typed text that is no code is not even sent.
func TestPairByCodeRefused(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	found := must(f.Code.Find(ctx)).ok(t)
	_, err := f.Code.Pair(ctx, found[0].Target(), "ABCD-EFGH", nil)
	var refused *lend.RefusedError
	if !errors.As(err, &refused) || refused.Kind != lend.RefusedWrong || !strings.Contains(err.Error(), "get a new code") {
		t.Fatalf("a wrong code: %v", err)
	}
	if _, paired, _ := f.SecondPC.State(); paired {
		t.Error("paired after a wrong code")
	}
	n := len(w.Calls())
	for _, typed := range []string{"ABC", "ABCD-EFG0", ""} {
		_, err := f.Code.Pair(ctx, found[0].Target(), typed, nil)
		if !errors.Is(err, lend.ErrCodeForm) {
			t.Errorf("%q: %v, want lend.ErrCodeForm", typed, err)
		}
	}
	if _, err := f.Code.Pair(ctx, pairing.CodeTarget{}, "HXK4-9TQM", nil); err == nil || !strings.Contains(err.Error(), "pick the PC") {
		t.Errorf("no PC picked: %v", err)
	}
	if len(w.Calls()) != n {
		t.Errorf("a code that is no code was sent: %q", w.Calls()[n:])
	}
}

// Cancel after a pairing by code takes the key off that PC again.
func TestCancelAfterPairByCodeUnpairs(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	found := must(f.Code.Find(ctx)).ok(t)
	must(f.Code.Pair(ctx, found[1].Target(), demo.LendCode.String(), nil)).ok(t)
	res := f.Cancel()
	if res.Changed || !hasCall(w, "unpair 192.168.1.31") || w.Paired {
		t.Errorf("Cancel: %+v, calls %q", res, w.Calls())
	}
}

// The PC of the settings is marked as paired already; an address typed
// is that PC when it names one found, else the usual pairing port.
func TestFoundMarksThePairedPCAndTypedAddresses(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementRemote,
		Remote: &settings.Remote{Host: "192.168.1.20", User: "sam", HostKey: "ssh-ed25519 AAAA", RemoteDir: `C:\sv`}}
	f := newFlow(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	found := must(f.Code.Find(ctx)).ok(t)
	if !found[0].Paired || found[1].Paired || !strings.HasSuffix(found[0].Describe(), ", already paired") {
		t.Errorf("found %+v", found)
	}
	for in, want := range map[string]pairing.CodeTarget{
		"office-pc":      found[1].Target(),
		"192.168.1.20":   found[0].Target(),
		"10.0.0.5":       {Name: "10.0.0.5", Host: "10.0.0.5", PairPort: lend.DefaultPairPort},
		"nas.local:7400": {Name: "nas.local", Host: "nas.local", PairPort: 7400},
	} {
		if got, err := f.Code.Typed(in); err != nil || got != want {
			t.Errorf("Typed(%q) = %+v %v, want %+v", in, got, err, want)
		}
	}
	if _, err := f.Code.Typed("laptop:ssh"); err == nil {
		t.Error("a port that is no number was taken")
	}
}

func TestFindLendersFailsAndGuards(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	if _, err := f.Code.Find(ctx); err == nil {
		t.Error("Find on the Welcome page")
	}
	driveTo(t, f, setupflow.PageSecondPC, settings.PlacementRemote)
	w.Fail["find-lenders"] = errors.New("no multicast here")
	if _, err := f.Code.Find(ctx); err == nil || !strings.Contains(err.Error(), "no multicast here") || !strings.Contains(err.Error(), "address") {
		t.Errorf("a failed Find: %v", err)
	}
	d := w.Deps(yes)
	d.Lenders = nil
	g, err := setupflow.New(ctx, d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Code.Available() {
		t.Error("pairing by code offered without Lenders")
	}
}
