package trayctl

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// recView records every menu the controller shows.
type recView struct {
	mu      sync.Mutex
	last    traymodel.Menu
	n       int
	changed chan struct{}
}

func newRecView() *recView { return &recView{changed: make(chan struct{})} }

func (v *recView) Show(m traymodel.Menu) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last, v.n = m, v.n+1
	close(v.changed)
	v.changed = make(chan struct{})
}

// waitFor waits until the shown menu satisfies ok (a generous deadline only
// to end a broken test; nothing here measures time).
func (v *recView) waitFor(t *testing.T, what string, ok func(traymodel.Menu) bool) traymodel.Menu {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		v.mu.Lock()
		m, ch, n := v.last, v.changed, v.n
		v.mu.Unlock()
		if n > 0 && ok(m) {
			return m
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the menu never showed %s; last menu:\n%s", what, dump(m))
		}
	}
}

func dump(m traymodel.Menu) string {
	var b strings.Builder
	b.WriteString("icon " + m.Icon + "\ntooltip " + m.Tooltip + "\n")
	for _, it := range m.Items {
		if it.Visible {
			b.WriteString("  " + it.Title + "\n")
		}
	}
	return b.String()
}

// countNotifier counts notices.
type countNotifier struct {
	mu  sync.Mutex
	got []traymodel.Notice
}

func (c *countNotifier) Notify(_ context.Context, n traymodel.Notice) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, n)
	return nil
}

func (c *countNotifier) titles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.got {
		out = append(out, n.Title)
	}
	return out
}

// fakeDesktop answers confirmations and records what was opened.
type fakeDesktop struct {
	mu       sync.Mutex
	answer   bool
	asked    []string
	opened   []string
	setups   []string
	noDialg  bool
	elevated [][]string
	// onElevated plays the elevated command (nil: it succeeds).
	onElevated func(args []string) error
}

func (d *fakeDesktop) RunElevated(_ context.Context, args ...string) error {
	d.mu.Lock()
	d.elevated = append(d.elevated, args)
	f := d.onElevated
	d.mu.Unlock()
	if f != nil {
		return f(args)
	}
	return nil
}

func (d *fakeDesktop) elevatedRuns() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, a := range d.elevated {
		out = append(out, strings.Join(a, " "))
	}
	return out
}

func (d *fakeDesktop) Confirm(_ context.Context, title, q string) (bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, q)
	return d.answer, !d.noDialg
}
func (d *fakeDesktop) Open(target string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opened = append(d.opened, target)
	return nil
}
func (d *fakeDesktop) OpenSetup(page string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.setups = append(d.setups, page)
	return nil
}

type fakeAutostart struct{ on bool }

func (a *fakeAutostart) Enabled() (bool, error) { return a.on, nil }
func (a *fakeAutostart) Set(on bool) error      { a.on = on; return nil }

func readyRemote(since time.Time) controlapi.State {
	return controlapi.State{
		Service: controlapi.ServiceInfo{Version: "test", Started: since, PID: 4242},
		Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: since, URL: "http://127.0.0.1:8080/v1",
			Model: "Qwen3.6-35B-A3B IQ2_XS", Port: 8080},
		Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady},
		Remote: &controlapi.RemoteInfo{Host: "gpu-laptop", Reachable: true, RTTms: 1.2, FreeVRAMMiB: 5800, Since: since},
		Config: controlapi.ConfigInfo{StrataRoot: "/opt/strata", Path: "/opt/strata/strata-iq2_xs.json", Valid: true},
	}
}

type rig struct {
	api      *testenv.Service
	view     *recView
	notes    *countNotifier
	desk     *fakeDesktop
	auto     *fakeAutostart
	ctl      *Controller
	settings *settings.Settings
}

func start(t *testing.T, st controlapi.State, paired bool) *rig {
	t.Helper()
	r := &rig{view: newRecView(), notes: &countNotifier{}, desk: &fakeDesktop{answer: true}, auto: &fakeAutostart{}}
	r.settings = &settings.Settings{}
	if paired {
		r.settings.Remote = &settings.Remote{Host: "gpu-laptop", User: "strata"}
	}
	st.Settings = controlapi.ViewOf(r.settings) // the service's state carries them
	r.api = testenv.NewService(t, st)
	connect := func() (*controlapi.Client, error) { return r.api.Client(), nil }
	ctl := New()
	ctl.View, ctl.Notifier, ctl.Desktop, ctl.Autostart = r.view, r.notes, r.desk, r.auto
	ctl.Connect = func() (controlapi.Owner, error) { return connect() }
	ctl.Logf = t.Logf
	r.ctl = ctl
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	w := &watch.Watcher{Connect: connect, Wait: 5 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Logf: t.Logf}
	go func() { defer wg.Done(); w.Run(ctx, ctl.Update) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

func item(m traymodel.Menu, id traymodel.ItemID) string { return m.Items[id].Title }

// The check: ready -> second PC down -> back. The status lines and
// the icon follow, and exactly two notifications are raised.
func TestReadyRemoteDownAndBack(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	r := start(t, readyRemote(since), true)

	m := r.view.waitFor(t, "the ready state", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: ready")
	})
	if m.Icon != assets.TrayReady || !strings.HasPrefix(item(m, traymodel.ItemRemote), "Second PC gpu-laptop: reachable · 1.2 ms · 5.7 GiB VRAM free") {
		t.Fatalf("ready menu:\n%s", dump(m))
	}
	if !m.Items[traymodel.ItemVisionRemote].Checked || item(m, traymodel.ItemVisionRemote) != "Vision: second PC (gpu-laptop)" {
		t.Errorf("the remote choice is not the checked one:\n%s", dump(m))
	}

	r.api.Change(func(s *controlapi.State) {
		s.Remote.Reachable, s.Remote.Reason, s.Remote.Since = false, "connection timed out", time.Now()
	}, events.Event{Kind: events.RemoteUnreachable, Message: "connection timed out"})
	m = r.view.waitFor(t, "the second PC down", func(m traymodel.Menu) bool {
		return strings.Contains(item(m, traymodel.ItemRemote), "not reachable")
	})
	if m.Icon != assets.TrayDegraded {
		t.Errorf("icon %q with the second PC down, want %q", m.Icon, assets.TrayDegraded)
	}
	if !strings.Contains(item(m, traymodel.ItemRemote), "connection timed out") || !strings.HasPrefix(item(m, traymodel.ItemServer), "Strata: ready") {
		t.Errorf("down menu:\n%s", dump(m))
	}
	if !strings.Contains(m.Tooltip, "not reachable: text only") {
		t.Errorf("tooltip %q", m.Tooltip)
	}

	r.api.Change(func(s *controlapi.State) {
		s.Remote.Reachable, s.Remote.Reason, s.Remote.RTTms = true, "", 1.5
	}, events.Event{Kind: events.RemoteReachable})
	m = r.view.waitFor(t, "the second PC back", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemRemote), "Second PC gpu-laptop: reachable · 1.5 ms")
	})
	if m.Icon != assets.TrayReady {
		t.Errorf("icon %q after the second PC came back", m.Icon)
	}

	// One more event, so that anything the last change might still raise has
	// been raised before counting.
	r.api.Change(func(s *controlapi.State) { s.Vision.LastPictureMS = 2830; s.Vision.LastPicture = time.Now() },
		events.Event{Kind: events.PictureEncoded})
	r.view.waitFor(t, "the last picture", func(m traymodel.Menu) bool {
		return strings.Contains(item(m, traymodel.ItemVision), "last picture")
	})
	got := r.notes.titles()
	if len(got) != 2 || got[0] != "Pictures unavailable: second PC not reachable" || got[1] != "Second PC is back" {
		t.Fatalf("notifications: %q, want exactly the down and the back one", got)
	}
}

// The tray starts before the service exists, then survives it restarting.
func TestServiceAbsentThenRestarting(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	api := testenv.NewService(t, readyRemote(since))
	api.Stop()
	view := newRecView()
	ctl := New()
	ctl.View, ctl.Logf = view, t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	connect := func() (*controlapi.Client, error) { return api.Client(), nil }
	w := &watch.Watcher{Connect: connect, Wait: 5 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	go func() { defer wg.Done(); w.Run(ctx, ctl.Update) }()
	defer func() { cancel(); wg.Wait() }()

	m := view.waitFor(t, "service not reachable", func(m traymodel.Menu) bool {
		return item(m, traymodel.ItemServer) == "Strata Companion service not reachable" && m.Icon == assets.TrayOffline &&
			strings.Contains(item(m, traymodel.ItemServerDetail), "strata-service start")
	})
	if m.Items[traymodel.ItemVisionCPU].Enabled || m.Items[traymodel.ItemRestart].Enabled {
		t.Errorf("actions enabled without a service:\n%s", dump(m))
	}
	api.Start()
	view.waitFor(t, "ready once the service is up", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })

	// A restart: a new address and new sequence numbers from 1.
	api.Stop()
	view.waitFor(t, "the service gone", func(m traymodel.Menu) bool { return m.Icon == assets.TrayOffline })
	api.Start()
	view.waitFor(t, "ready again", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	api.Change(func(s *controlapi.State) {
		s.Server.Phase, s.Server.Detail = controlapi.PhaseStarting, "filling the expert cache"
	},
		events.Event{Kind: events.ServerStarting})
	view.waitFor(t, "an event after the restart", func(m traymodel.Menu) bool {
		return strings.Contains(item(m, traymodel.ItemServer), "filling the expert cache") && m.Icon == assets.TrayBusy
	})
}

// Choosing a vision placement: confirm, POST, progress until ready, and a
// notice that Strata is ready.
func TestSwitchVision(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	r.api.OnVision(func(req controlapi.VisionRequest) {
		r.api.Change(func(s *controlapi.State) {
			s.Server.Phase, s.Server.Detail, s.Server.Since = controlapi.PhaseRestarting, "loading the vision encoder", time.Now()
		}, events.Event{Kind: events.ConfigChanged}, events.Event{Kind: events.ServerRestarting})
	})
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })

	r.ctl.Click(traymodel.ItemVisionCPU)
	m := r.view.waitFor(t, "progress", func(m traymodel.Menu) bool {
		return item(m, traymodel.ItemProgress) == "Switching vision to the CPU: loading the vision encoder..."
	})
	if m.Icon != assets.TrayBusy || m.Items[traymodel.ItemVisionGPU].Enabled {
		t.Errorf("while switching:\n%s", dump(m))
	}
	// The dry run first (it says the switch restarts Strata), then the switch.
	posts := r.api.Posts()
	if len(posts) != 2 || posts[0].Vision == nil || !posts[0].Vision.DryRun || posts[1].Vision == nil || posts[1].Vision.DryRun || posts[1].Vision.Placement != "cpu" {
		t.Fatalf("posts %+v", posts)
	}
	r.desk.mu.Lock()
	asked := r.desk.asked
	r.desk.mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], "restarts Strata") || !strings.Contains(asked[0], "text stops for a while") {
		t.Errorf("confirmation asked: %q", asked)
	}

	r.api.Change(func(s *controlapi.State) {
		s.Server.Phase, s.Server.Detail, s.Server.Since = controlapi.PhaseReady, "", time.Now()
		s.Vision = controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady}
		s.Remote = nil
	}, events.Event{Kind: events.ServerReady})
	m = r.view.waitFor(t, "ready on the CPU", func(m traymodel.Menu) bool {
		return m.Items[traymodel.ItemVisionCPU].Checked && !m.Items[traymodel.ItemProgress].Visible
	})
	if m.Icon != assets.TrayReady || m.Items[traymodel.ItemRemote].Visible {
		t.Errorf("after the switch:\n%s", dump(m))
	}
	if got := r.notes.titles(); len(got) != 1 || got[0] != "Strata is ready" {
		t.Errorf("notices %q", got)
	}
}

// A switch the service's dry run says needs no restart (the second PC to
// the CPU): no question; a notice says Strata keeps running; the progress
// line goes as soon as the placement shows, with no new start to wait for.
func TestSwitchVisionWithoutRestart(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	r.api.VisionWithoutRestart(true)
	r.api.OnVision(func(req controlapi.VisionRequest) {
		r.api.Change(func(s *controlapi.State) { s.Vision.Placement = req.Placement }, events.Event{Kind: events.ConfigChanged})
	})
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	r.ctl.Click(traymodel.ItemVisionCPU)
	m := r.view.waitFor(t, "on the CPU", func(m traymodel.Menu) bool {
		return m.Items[traymodel.ItemVisionCPU].Checked && !m.Items[traymodel.ItemProgress].Visible
	})
	if m.Icon != assets.TrayReady {
		t.Errorf("after the switch:\n%s", dump(m))
	}
	r.desk.mu.Lock()
	asked := r.desk.asked
	r.desk.mu.Unlock()
	if len(asked) != 0 {
		t.Errorf("asked although nothing restarts: %q", asked)
	}
	if posts := r.api.Posts(); len(posts) != 2 || !posts[0].Vision.DryRun || posts[1].Vision.DryRun {
		t.Errorf("posts %+v", posts)
	}
	for deadline := time.Now().Add(10 * time.Second); len(r.notes.titles()) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	r.notes.mu.Lock()
	defer r.notes.mu.Unlock()
	if len(r.notes.got) != 1 || !strings.Contains(r.notes.got[0].Body, "needs no restart") {
		t.Errorf("notices %+v", r.notes.got)
	}
}

func TestClicks(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), false)
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })

	// No second PC paired: the choice opens setup on that page.
	r.api.Change(func(s *controlapi.State) { s.Vision.Placement, s.Remote = "gpu", nil }, events.Event{Kind: events.ConfigChanged})
	r.view.waitFor(t, "vision on the GPU", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemVisionGPU].Checked })
	r.ctl.Click(traymodel.ItemVisionRemote)

	// Declined: nothing is posted.
	r.desk.mu.Lock()
	r.desk.answer = false
	r.desk.mu.Unlock()
	r.ctl.Click(traymodel.ItemVisionOff)
	r.ctl.Click(traymodel.ItemOpenBrowser)
	r.ctl.Click(traymodel.ItemSetup)
	r.ctl.Click(traymodel.ItemAutostart)
	m := r.view.waitFor(t, "autostart on", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemAutostart].Checked })
	if !m.Items[traymodel.ItemVisionGPU].Checked || m.Items[traymodel.ItemVisionOff].Checked {
		t.Errorf("a declined switch changed the check marks:\n%s", dump(m))
	}
	r.ctl.Click(traymodel.ItemAutostart)
	r.view.waitFor(t, "autostart off", func(m traymodel.Menu) bool { return !m.Items[traymodel.ItemAutostart].Checked })
	if r.auto.on {
		t.Error("autostart still on")
	}
	// The switch runs off the controller's goroutine: wait for its question.
	// Once it is declined nothing more is posted, so the service saw only
	// the dry run that decided whether to ask.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r.desk.mu.Lock()
		n := len(r.desk.asked)
		r.desk.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("switching vision off asked nothing")
		}
	}
	if p := r.api.Posts(); len(p) != 1 || p[0].Vision == nil || !p[0].Vision.DryRun || p[0].Vision.Placement != "off" {
		t.Errorf("posted %+v around a declined confirmation; want only the dry run for off", p)
	}
	r.desk.mu.Lock()
	defer r.desk.mu.Unlock()
	if len(r.desk.setups) != 2 || r.desk.setups[0] != "remote" || r.desk.setups[1] != "" {
		t.Errorf("setup opened with %q, want remote then the start page", r.desk.setups)
	}
	if len(r.desk.opened) != 1 || r.desk.opened[0] != "http://127.0.0.1:8080/" {
		t.Errorf("opened %q", r.desk.opened)
	}
}

// Without a dialog program the switch goes ahead and a notice says why.
func TestSwitchWithoutDialog(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	r.desk.noDialg = true
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	r.ctl.Click(traymodel.ItemRestart)
	r.view.waitFor(t, "progress", func(m traymodel.Menu) bool { return item(m, traymodel.ItemProgress) == "Restarting Strata..." })
	if p := r.api.Posts(); len(p) != 1 || p[0].Path != "/v1/server/restart" {
		t.Errorf("posts %+v", p)
	}
	got := r.notes.titles()
	if len(got) != 1 || got[0] != "Restart Strata" {
		t.Errorf("notices %q", got)
	}
}

// Free the GPU: asked first (the next request waits for the model), then
// POST /v1/server/unload; the progress line lasts until the state says the
// model went, and then the item is gone (nothing left to give back).
func TestFreeTheGPU(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	m := r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	if it := m.Items[traymodel.ItemUnload]; !it.Visible || !it.Enabled || it.Title != traymodel.UnloadTitle {
		t.Fatalf("the item on a ready server: %+v", it)
	}
	r.ctl.Click(traymodel.ItemUnload)
	r.view.waitFor(t, "the item gone once the model is", func(m traymodel.Menu) bool {
		return !m.Items[traymodel.ItemUnload].Visible && item(m, traymodel.ItemProgress) == ""
	})
	if p := r.api.Posts(); len(p) != 1 || p[0].Path != "/v1/server/unload" {
		t.Errorf("posts %+v", p)
	}
	r.desk.mu.Lock()
	asked := append([]string(nil), r.desk.asked...)
	r.desk.mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], "next request waits") {
		t.Errorf("asked %q", asked)
	}
}

// BenchmarkEventToMenu measures how long a change in the service takes to
// reach the tray's menu: event published, long-poll answered, state re-read,
// menu computed and shown.
func BenchmarkEventToMenu(b *testing.B) {
	api := testenv.NewService(b, readyRemote(time.Now()))
	view := newRecView()
	ctl := New()
	ctl.View = view
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ctl.Run(ctx)
	w := &watch.Watcher{Connect: func() (*controlapi.Client, error) { return api.Client(), nil }, Wait: 5 * time.Second}
	go w.Run(ctx, ctl.Update)
	wait := func(rtt float64) {
		for {
			view.mu.Lock()
			m, ch := view.last, view.changed
			view.mu.Unlock()
			if m.Items[traymodel.ItemRemote].Title != "" && strings.Contains(m.Items[traymodel.ItemRemote].Title, fmt.Sprintf("%.1f ms", rtt)) {
				return
			}
			<-ch
		}
	}
	wait(1.2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rtt := float64(i%50+2) + 0.5
		api.Change(func(s *controlapi.State) { s.Remote.RTTms = rtt }, events.Event{Kind: events.RemoteConnected})
		wait(rtt)
	}
}

func BenchmarkBuild(b *testing.B) {
	st := readyRemote(time.Now())
	in := traymodel.Input{Now: time.Now(), State: &st, RemoteName: "gpu-laptop"}
	for i := 0; i < b.N; i++ {
		traymodel.Build(in)
	}
}

// A switch the service refuses: the reason shows in the menu and in a
// notice, nothing stays "in progress", and the check mark does not move.
func TestSwitchRefused(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	r.api.RejectVision("no vision projector for the CPU in /opt/strata; run setup to download it")
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	r.ctl.Click(traymodel.ItemVisionCPU)
	m := r.view.waitFor(t, "the refusal", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemProgress), "Switching vision to the CPU failed: the service answered 400: no vision projector")
	})
	if m.Icon != assets.TrayReady || !m.Items[traymodel.ItemVisionRemote].Checked || !m.Items[traymodel.ItemVisionCPU].Enabled {
		t.Errorf("after a refused switch:\n%s", dump(m))
	}
	got := r.notes.titles()
	if len(got) != 1 || got[0] != "Switch vision to the CPU: not done" {
		t.Errorf("notices %q", got)
	}
}

// TestRelayEventsAndFallbackSwitch: the relay's picture, wake and failover
// events show in the menu; the fallback switch posts the setting (no
// restart) and shows the new value.
func TestRelayEventsAndFallbackSwitch(t *testing.T) {
	r := start(t, readyRemote(time.Now().Add(-time.Hour)), true)
	r.view.waitFor(t, "ready", func(m traymodel.Menu) bool { return m.Icon == assets.TrayReady })
	m := r.view.waitFor(t, "fallback switch", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemFallback].Visible })
	if m.Items[traymodel.ItemFallback].Checked {
		t.Fatal("fallback checked while the settings have it off")
	}
	r.api.Change(func(*controlapi.State) {},
		events.Event{Kind: events.VisionFallback, Message: "second PC off"},
		func() events.Event {
			e := events.New("", events.PictureEncodedDetails{Where: events.WhereFallbackCPU, MS: 15270})
			e.Time = time.Now()
			return e
		}())
	r.view.waitFor(t, "last picture line", func(m traymodel.Menu) bool {
		return strings.Contains(item(m, traymodel.ItemLastPicture), "on the CPU (fallback), 15 s") && strings.Contains(item(m, traymodel.ItemLastPicture), "fallbacks: 1")
	})
	r.ctl.Click(traymodel.ItemFallback)
	r.view.waitFor(t, "fallback on", func(m traymodel.Menu) bool { return m.Items[traymodel.ItemFallback].Checked })
	var patched *controlapi.SettingsPatch
	for _, p := range r.api.Posts() {
		if p.Path == "/v1/settings" {
			patched = p.Settings
		}
	}
	if patched == nil || patched.FallbackCPU == nil || !*patched.FallbackCPU {
		t.Fatalf("posts %+v: want POST /v1/settings with fallback_cpu true", r.api.Posts())
	}
	for _, p := range r.api.Posts() {
		if p.Path == "/v1/vision" || strings.HasPrefix(p.Path, "/v1/server/") {
			t.Fatalf("the fallback switch restarted or reconfigured Strata: %+v", p)
		}
	}
}
