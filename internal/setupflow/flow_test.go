package setupflow_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/testenv"
)

var ctx = context.Background()

func yes(context.Context, setupflow.HostKey) bool { return true }

func no(context.Context, setupflow.HostKey) bool { return false }

func newFlow(t *testing.T, w *demo.World, opts setupflow.Options) *setupflow.Flow {
	t.Helper()
	f, err := setupflow.New(ctx, w.Deps(yes), opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type result[T any] struct {
	v   T
	err error
}

// must wraps a (value, error) call: must(f.Find.Search(ctx)).ok(t).
func must[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func next(t *testing.T, f *setupflow.Flow, want setupflow.Page) {
	t.Helper()
	p, err := f.Next()
	if err != nil {
		t.Fatalf("Next on %s: %v", f.Page(), err)
	}
	if p != want {
		t.Fatalf("Next went to %s, want %s", p, want)
	}
}

// driveTo walks a new machine from Welcome to page, choosing placement.
func driveTo(t *testing.T, f *setupflow.Flow, page setupflow.Page, placement settings.Placement) {
	t.Helper()
	steps := []func(){
		func() { next(t, f, setupflow.PageFindStrata) },
		func() {
			must(f.Find.Search(ctx)).ok(t)
			next(t, f, setupflow.PageThisPC)
		},
		func() {
			must(f.Choice.Probe(ctx, nil)).ok(t)
			next(t, f, setupflow.PagePlacement)
		},
		func() {
			if err := f.Choice.Choose(placement, nil); err != nil {
				t.Fatal(err)
			}
			if placement == settings.PlacementRemote {
				next(t, f, setupflow.PageSecondPC)
			} else {
				next(t, f, setupflow.PageReview)
			}
		},
		func() {
			if placement != settings.PlacementRemote {
				return
			}
			f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20", Password: "hunter2"})
			must(f.SecondPC.Probe(ctx, nil)).ok(t)
			must(f.SecondPC.Pair(ctx, nil)).ok(t)
			if err := f.SecondPC.Prepare(ctx, nil); err != nil {
				t.Fatal(err)
			}
			next(t, f, setupflow.PageReview)
		},
		func() {
			must(f.Apply.PlanReview(ctx)).ok(t)
			next(t, f, setupflow.PageApply)
		},
		func() {
			if err := f.Apply.Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
			next(t, f, setupflow.PageDone)
		},
	}
	for _, s := range steps {
		if f.Page() == page {
			return
		}
		s()
	}
	if f.Page() != page {
		t.Fatalf("ended on %s, want %s", f.Page(), page)
	}
}

// The check: "second PC" from Welcome to Done produces the expected
// config and service calls.
func TestSecondPCWelcomeToDone(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	if f.Page() != setupflow.PageWelcome {
		t.Fatalf("a new machine starts on %s", f.Page())
	}
	var lines []string
	driveTo(t, f, setupflow.PageApply, settings.PlacementRemote)
	if err := f.Apply.Run(ctx, func(p setupflow.Progress) {
		if p.LogLine != "" {
			lines = append(lines, p.LogLine)
		}
	}); err != nil {
		t.Fatal(err)
	}
	next(t, f, setupflow.PageDone)

	if w.ConfigText != demo.RenderConfig(setupflow.VisionChoice{Placement: settings.PlacementRemote}) {
		t.Errorf("config written:\n%s", w.ConfigText)
	}
	if !strings.Contains(w.ConfigText, `"remote": true`) || !strings.Contains(w.ConfigText, "strata-vision-relay") {
		t.Errorf("the config does not run the relay:\n%s", w.ConfigText)
	}
	want := []string{
		"find",
		"probe",
		"remote-probe sam@192.168.1.20",
		"pair sam@192.168.1.20 password=true agent=false",
		"prepare 192.168.1.20",
		"status",
		"plan /opt/strata/strata-iq2_xs.json remote sam@192.168.1.20",
		"status",
		"plan /opt/strata/strata-iq2_xs.json remote sam@192.168.1.20",
		"install /opt/strata /opt/strata/strata-iq2_xs.json",
		"write /opt/strata/strata-iq2_xs.json",
		"settings-save vision=remote",
		"start restart=false",
		"follow 41",
	}
	if got := w.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := w.Settings
	if s == nil || s.Vision != settings.PlacementRemote || s.Remote == nil || s.Remote.Host != "192.168.1.20" ||
		s.Remote.User != "sam" || s.Remote.HostKey == "" || s.Remote.RemoteDir == "" || s.StrataRoot != "/opt/strata" {
		t.Errorf("settings saved: %+v remote %+v", s, s.Remote)
	}
	if w.Login {
		t.Error("the tray was set to start at login without being ticked")
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "ready:") {
		t.Errorf("the live log did not end with ready: %q", lines)
	}
	if ok, done := f.Apply.Applied(); !ok || !strings.Contains(strings.Join(done, " "), "second PC") {
		t.Errorf("done lines: %v", done)
	}
	if w.HostKeyAsked != 1 {
		t.Errorf("host key asked %d times (the probe's answer should cover pairing)", w.HostKeyAsked)
	}
	if _, err := f.Back(); err == nil {
		t.Error("Back from Done worked")
	}
}

func TestPlacementsReachDone(t *testing.T) {
	for _, p := range []settings.Placement{settings.PlacementGPU, settings.PlacementCPU, settings.PlacementOff} {
		t.Run(string(p), func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			f := newFlow(t, w, setupflow.Options{})
			driveTo(t, f, setupflow.PageDone, p)
			if w.ConfigText != demo.RenderConfig(setupflow.VisionChoice{Placement: p}) {
				t.Errorf("config:\n%s", w.ConfigText)
			}
			for _, c := range w.Calls() {
				if strings.HasPrefix(c, "remote-probe") || strings.HasPrefix(c, "pair") {
					t.Errorf("%s touched the second PC: %s", p, c)
				}
			}
			if w.Settings.Vision != p || !w.Installed || !w.Running {
				t.Errorf("settings %+v installed %t running %t", w.Settings, w.Installed, w.Running)
			}
		})
	}
}

// snapshot is everything a cancel must leave as it was.
type snapshot struct {
	config         string
	settings       *settings.Settings
	installed, run bool
	login, paired  bool
}

func snap(w *demo.World) snapshot {
	return snapshot{w.ConfigText, w.Settings, w.Installed, w.Running, w.Login, w.Paired}
}

func TestCancelAtEveryPageChangesNothing(t *testing.T) {
	pages := []setupflow.Page{setupflow.PageWelcome, setupflow.PageFindStrata, setupflow.PageThisPC, setupflow.PagePlacement, setupflow.PageSecondPC, setupflow.PageReview, setupflow.PageApply}
	for _, p := range pages {
		t.Run(p.String(), func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			before := snap(w)
			f := newFlow(t, w, setupflow.Options{})
			driveTo(t, f, p, settings.PlacementRemote)
			if p == setupflow.PageReview {
				f.Apply.SetTrayAtLogin(true)
			}
			res := f.Cancel()
			if res.Changed {
				t.Errorf("Cancel says it changed something: %v", res.Messages)
			}
			after := snap(w)
			if after != before {
				t.Errorf("Cancel on %s left changes: before %+v after %+v", p, before, after)
			}
			for _, c := range w.Calls() {
				for _, bad := range []string{"write", "install", "settings-save", "start", "login"} {
					if strings.HasPrefix(c, bad) {
						t.Errorf("Cancel on %s after %q", p, c)
					}
				}
			}
			if p > setupflow.PageSecondPC && !strings.Contains(strings.Join(res.Messages, " "), "removed again") {
				t.Errorf("the pairing made on the way was not undone: %v", res.Messages)
			}
			if _, err := f.Next(); !errors.Is(err, setupflow.ErrCancelled) {
				t.Errorf("Next after Cancel: %v", err)
			}
		})
	}
}

// Cancel during a long operation on each page stops it promptly.
func TestCancelDuringLongOperations(t *testing.T) {
	type op struct {
		page setupflow.Page
		run  func(ctx context.Context, f *setupflow.Flow) error
	}
	ops := map[string]op{
		"find":   {setupflow.PageFindStrata, func(c context.Context, f *setupflow.Flow) error { _, err := f.Find.Search(c); return err }},
		"probe":  {setupflow.PageThisPC, func(c context.Context, f *setupflow.Flow) error { _, err := f.Choice.Probe(c, nil); return err }},
		"remote": {setupflow.PageSecondPC, func(c context.Context, f *setupflow.Flow) error { _, err := f.SecondPC.Probe(c, nil); return err }},
		"apply":  {setupflow.PageApply, func(c context.Context, f *setupflow.Flow) error { return f.Apply.Run(c, nil) }},
	}
	// The first failure ends the table: a flow whose Busy is never set
	// fails in 20 s, not in 8 x 20 s.
	for name, o := range ops {
		for _, how := range []string{"cancel", "back"} {
			ok := t.Run(name+"/"+how, func(t *testing.T) {
				w := demo.NewWorld("/opt/strata")
				before := snap(w)
				f := newFlow(t, w, setupflow.Options{})
				driveTo(t, f, o.page, settings.PlacementRemote)
				if o.page == setupflow.PageSecondPC {
					f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "sam@192.168.1.20"})
				}
				w.Delay = time.Hour // every step now waits until cancelled
				errc := make(chan error, 1)
				go func() { errc <- o.run(ctx, f) }()
				testenv.WaitFor(t, 20*time.Second, name+" to be under way (Busy set)", func() bool { return f.Busy() != "" })
				if how == "back" {
					if o.page == setupflow.PageApply {
						if _, err := f.Back(); err == nil {
							t.Fatal("Back worked while applying")
						}
						f.Cancel()
					} else if _, err := f.Back(); err != nil {
						t.Fatal(err)
					}
				} else {
					f.Cancel()
				}
				err := testenv.Receive(t, errc, 20*time.Second, name+" to end after "+how)
				if !errors.Is(err, context.Canceled) && !errors.Is(err, setupflow.ErrCancelled) {
					t.Fatalf("the operation ended with %v, want cancelled", err)
				}
				w.Delay = 0
				if o.page == setupflow.PageApply {
					var ae *setupflow.ApplyError
					if !errors.As(err, &ae) {
						t.Fatalf("Apply cancelled: %T %v", err, err)
					}
				}
				if how == "back" && o.page != setupflow.PageApply {
					if f.Busy() != "" {
						t.Error("still busy after Back")
					}
					f.Cancel()
				}
				if after := snap(w); after != before {
					t.Errorf("cancelled %s left changes: %+v -> %+v\ncalls %v", name, before, after, w.Calls())
				}
			})
			if !ok {
				return
			}
		}
	}
}

func TestGuards(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	next(t, f, setupflow.PageFindStrata)
	if _, err := f.Next(); err == nil {
		t.Error("Next without an install")
	}
	must(f.Find.Search(ctx)).ok(t)
	if err := f.Find.SelectInstall(1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err == nil || !strings.Contains(err.Error(), "venv") {
		t.Errorf("Next with a broken install: %v", err)
	}
	if _, err := f.Find.Browse(ctx, "/nowhere"); err == nil {
		t.Error("Browse to a non-install worked")
	}
	must(f.Find.Browse(ctx, "/opt/strata")).ok(t)
	next(t, f, setupflow.PageThisPC)
	if _, err := f.Next(); err == nil {
		t.Error("Next before the probe finished")
	}
	if _, err := f.SecondPC.Probe(ctx, nil); err == nil {
		t.Error("a remote probe from the This PC page")
	}
	must(f.Choice.Probe(ctx, nil)).ok(t)
	next(t, f, setupflow.PagePlacement)
	if got := f.Choice.Current().Placement; got != settings.PlacementGPU {
		t.Errorf("preselected %s, want the recommendation gpu", got)
	}
	if err := f.Choice.Choose("nowhere", nil); err == nil {
		t.Error("an invalid placement")
	}
	f.Choice.Choose(settings.PlacementRemote, nil)
	next(t, f, setupflow.PageSecondPC)
	if _, err := f.Next(); err == nil {
		t.Error("Next before pairing")
	}
	if _, err := f.SecondPC.Pair(ctx, nil); err == nil {
		t.Error("Pair before a probe")
	}
	if _, err := f.SecondPC.Probe(ctx, nil); err == nil {
		t.Error("a probe with no address")
	}
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: "192.168.1.20", User: "sam"})
	rep := must(f.SecondPC.Probe(ctx, nil)).ok(t)
	if rep.PictureSeconds <= 1.63 || rep.PictureSeconds > 3 {
		t.Errorf("remote estimate %.2f s", rep.PictureSeconds)
	}
	if rec := f.Choice.Recommendation(); rec.Best != settings.PlacementRemote {
		t.Errorf("with a probed second PC, recommended %s", rec.Best)
	}
	if err := f.SecondPC.Prepare(ctx, nil); err == nil {
		t.Error("Prepare before pairing")
	}
	must(f.SecondPC.Pair(ctx, nil)).ok(t)
	if _, err := f.Next(); err == nil {
		t.Error("Next before preparing")
	}
	if f.SecondPC.Target().Password != "" {
		t.Error("the password was kept after pairing")
	}
}

func TestAlreadyConfiguredStartsAtCurrentSettings(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementRemote,
		Remote: &settings.Remote{Host: "192.168.1.20", User: "sam", HostKey: "ssh-ed25519 AAAA", RemoteDir: "/home/sam/sv"}}
	w.Installed, w.Running = true, true
	f := newFlow(t, w, setupflow.Options{})
	if !f.Configured() || f.Page() != setupflow.PagePlacement || f.Choice.Current().Placement != settings.PlacementRemote {
		t.Fatalf("configured %t page %s choice %s", f.Configured(), f.Page(), f.Choice.Current().Placement)
	}
	must(f.Choice.Probe(ctx, nil)).ok(t)
	if f.Choice.Current().Placement != settings.PlacementRemote {
		t.Error("the probe replaced the current setting with the recommendation")
	}
	// Switch to the GPU: Review, Apply restarts the running server.
	f.Choice.Choose(settings.PlacementGPU, nil)
	next(t, f, setupflow.PageReview)
	rv := must(f.Apply.PlanReview(ctx)).ok(t)
	if !strings.Contains(strings.Join(rv.Service, "\n"), "restarted") {
		t.Errorf("service lines: %v", rv.Service)
	}
	next(t, f, setupflow.PageApply)
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.Calls(), "start restart=true") {
		t.Errorf("calls %v", w.Calls())
	}
	if w.Settings.Remote == nil || w.Settings.Remote.Host != "192.168.1.20" {
		t.Error("the paired second PC was forgotten when switching to the GPU")
	}
	// Back goes through the earlier pages.
	g := newFlow(t, w, setupflow.Options{})
	if p := must(g.Back()).ok(t); p != setupflow.PageThisPC {
		t.Errorf("Back from an already-configured start went to %s", p)
	}
}

func TestStartPage(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	if f.Page() != setupflow.PageFindStrata || f.Notice() == "" {
		t.Errorf("--page remote on a new machine: %s", f.Page())
	}
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementGPU}
	f = newFlow(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	if f.Page() != setupflow.PageSecondPC || f.Choice.Current().Placement != settings.PlacementRemote {
		t.Errorf("--page remote: %s %s", f.Page(), f.Choice.Current().Placement)
	}
	if p := must(f.Back()).ok(t); p != setupflow.PagePlacement {
		t.Errorf("Back went to %s", p)
	}
	for _, s := range []string{"welcome", "strata", "this-pc", "placement", "remote", "second-pc", "review"} {
		if _, err := setupflow.ParsePage(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := setupflow.ParsePage("nope"); err == nil {
		t.Error("ParsePage(nope)")
	}
}

func TestBusyRefusesSecondOperation(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	f := newFlow(t, w, setupflow.Options{})
	driveTo(t, f, setupflow.PageThisPC, "")
	w.Delay = time.Hour
	var started atomic.Bool
	done := make(chan error, 1)
	go func() { started.Store(true); _, err := f.Choice.Probe(ctx, nil); done <- err }()
	testenv.WaitFor(t, 20*time.Second, "the probe to be under way (Busy set)", func() bool { return f.Busy() != "" })
	if _, err := f.Choice.Probe(ctx, nil); !errors.Is(err, setupflow.ErrBusy) {
		t.Errorf("second probe: %v", err)
	}
	if _, err := f.Next(); !errors.Is(err, setupflow.ErrBusy) {
		t.Errorf("Next while probing: %v", err)
	}
	f.Cancel()
	testenv.Receive(t, done, 20*time.Second, "the cancelled probe to end")
}
