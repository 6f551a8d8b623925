package traymodel

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

var t0 = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

// ready is a server that is up with vision on the second PC, all well.
func ready() *controlapi.State {
	return &controlapi.State{
		Seq: 10,
		Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Since: t0.Add(-2*time.Hour - 5*time.Minute),
			URL: "http://127.0.0.1:8080/v1", Model: "Qwen3.6-35B-A3B IQ2_XS", Port: 8080},
		Vision: controlapi.VisionState{Placement: "remote", Encoder: controlapi.EncoderReady,
			LastPicture: t0.Add(-3 * time.Minute), LastPictureMS: 2830},
		Remote: &controlapi.RemoteInfo{Host: "gpu-laptop", Reachable: true, RTTms: 1.4, FreeVRAMMiB: 5120, Since: t0.Add(-time.Hour)},
		Config: controlapi.ConfigInfo{Valid: true, StrataRoot: `C:\Strata`, Path: `C:\Strata\strata-iq2_xs.json`},
	}
}

func with(f func(*controlapi.State)) *controlapi.State {
	s := ready()
	f(s)
	return s
}

func TestBuild(t *testing.T) {
	remoteDown := with(func(s *controlapi.State) {
		s.Remote.Reachable, s.Remote.Reason, s.Remote.Since = false, "connection timed out", t0.Add(-time.Minute)
	})
	type want struct {
		icon        string
		lines       map[ItemID]string // exact titles (hidden items: "")
		contains    map[ItemID]string // substrings
		checked     ItemID            // the vision choice with the check mark (-1: none)
		choicesOn   bool              // vision choices enabled
		remoteSetup bool              // the remote choice offers setup
		restartOn   bool
		browserOn   bool
	}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{"ready on the second PC", Input{State: ready(), RemoteName: "gpu-laptop"}, want{
			icon: assets.TrayReady,
			lines: map[ItemID]string{
				ItemServer:       "Strata: ready · Qwen3.6-35B-A3B IQ2_XS · since 11:55",
				ItemServerDetail: "",
				ItemVision:       "Vision: second PC · encoder ready · last picture 13:57 (2.8 s)",
				ItemRemote:       "Second PC gpu-laptop: reachable · 1.4 ms · 5.0 GiB VRAM free",
				ItemProgress:     "",
				ItemVisionRemote: "Vision: second PC (gpu-laptop)",
			},
			checked: ItemVisionRemote, choicesOn: true, restartOn: true, browserOn: true,
		}},
		{"second PC down: degraded, text works", Input{State: remoteDown, RemoteName: "gpu-laptop"}, want{
			icon: assets.TrayDegraded,
			lines: map[ItemID]string{
				ItemRemote: "Second PC gpu-laptop: not reachable (connection timed out) since 13:59",
			},
			checked: ItemVisionRemote, choicesOn: true, restartOn: true, browserOn: true,
		}},
		{"encoder failed on the GPU", Input{State: with(func(s *controlapi.State) {
			s.Vision = controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderFailed, Error: "out of VRAM"}
			s.Remote = nil
		})}, want{
			icon:     assets.TrayDegraded,
			lines:    map[ItemID]string{ItemVision: "Vision: this GPU · encoder failed (out of VRAM)", ItemRemote: ""},
			contains: map[ItemID]string{ItemVisionRemote: "not set up"},
			checked:  ItemVisionGPU, choicesOn: true, remoteSetup: true, restartOn: true, browserOn: true,
		}},
		{"elastic encoder idle-stopped is fine", Input{State: with(func(s *controlapi.State) {
			s.Vision.Encoder = controlapi.EncoderIdle
		}), RemoteName: "gpu-laptop"}, want{
			icon:     assets.TrayReady,
			contains: map[ItemID]string{ItemVision: "encoder idle-stopped"},
			checked:  ItemVisionRemote, choicesOn: true, restartOn: true, browserOn: true,
		}},
		{"starting with a phase", Input{State: with(func(s *controlapi.State) {
			s.Server.Phase, s.Server.Detail, s.Server.Since = controlapi.PhaseStarting, "filling the expert cache", t0.Add(-40*time.Second)
			s.Vision.Encoder = controlapi.EncoderStarting
		}), RemoteName: "gpu-laptop"}, want{
			icon:     assets.TrayBusy,
			lines:    map[ItemID]string{ItemServer: "Strata: starting (filling the expert cache) · Qwen3.6-35B-A3B IQ2_XS · for 40 s"},
			contains: map[ItemID]string{ItemVisionCPU: "(wait until Strata is ready)"},
			checked:  ItemVisionRemote, choicesOn: false, restartOn: true, browserOn: false,
		}},
		{"failed: the reason shows", Input{State: with(func(s *controlapi.State) {
			s.Server.Phase, s.Server.LastError = controlapi.PhaseFailed, "port 8080 is in use by another program"
		}), RemoteName: "gpu-laptop"}, want{
			icon:    assets.TrayError,
			lines:   map[ItemID]string{ItemServer: "Strata: failed · Qwen3.6-35B-A3B IQ2_XS", ItemServerDetail: "  port 8080 is in use by another program"},
			checked: ItemVisionRemote, choicesOn: true, restartOn: true, browserOn: false,
		}},
		{"stopped: Start instead of Restart", Input{State: with(func(s *controlapi.State) {
			s.Server.Phase = controlapi.PhaseStopped
		}), RemoteName: "gpu-laptop"}, want{
			icon:     assets.TrayOffline,
			contains: map[ItemID]string{ItemRestart: "Start Strata"},
			checked:  ItemVisionRemote, choicesOn: true, restartOn: true,
		}},
		{"vision off", Input{State: with(func(s *controlapi.State) {
			s.Vision = controlapi.VisionState{Placement: "off", Encoder: controlapi.EncoderOff}
			s.Remote = nil
		}), RemoteName: "gpu-laptop"}, want{
			icon:    assets.TrayReady,
			lines:   map[ItemID]string{ItemVision: "Vision: off (text only)", ItemRemote: ""},
			checked: ItemVisionOff, choicesOn: true, restartOn: true, browserOn: true,
		}},
		{"service not installed", Input{Reach: NotRunning, Problem: "  install it"}, want{
			icon:     assets.TrayOffline,
			lines:    map[ItemID]string{ItemServer: "Strata Companion service not installed or not running", ItemServerDetail: "  install it", ItemVision: "", ItemRemote: ""},
			contains: map[ItemID]string{ItemVisionGPU: "(service not running)", ItemVisionRemote: "(service not running)"},
			checked:  -1,
		}},
		{"switching: progress, busy icon, choices locked", Input{State: with(func(s *controlapi.State) {
			s.Server.Phase, s.Server.Detail = controlapi.PhaseRestarting, "loading the vision encoder"
		}), RemoteName: "gpu-laptop", Pending: &Pending{Action: "vision", Placement: "cpu", Started: t0}}, want{
			icon:     assets.TrayBusy,
			lines:    map[ItemID]string{ItemProgress: "Switching vision to the CPU: loading the vision encoder..."},
			contains: map[ItemID]string{ItemVisionCPU: "(switching)"},
			checked:  ItemVisionRemote, choicesOn: false, restartOn: false,
		}},
		{"a failed switch says why", Input{State: ready(), RemoteName: "gpu-laptop",
			Pending: &Pending{Action: "vision", Placement: "cpu", Started: t0, Err: "the service answered 400: no CPU mmproj"}}, want{
			icon:    assets.TrayReady,
			lines:   map[ItemID]string{ItemProgress: "Switching vision to the CPU failed: the service answered 400: no CPU mmproj"},
			checked: ItemVisionRemote, choicesOn: true, restartOn: true, browserOn: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = t0
			m := Build(tt.in)
			if m.Icon != tt.want.icon {
				t.Errorf("icon %q, want %q", m.Icon, tt.want.icon)
			}
			for id, w := range tt.want.lines {
				it := m.Items[id]
				if it.Title != w || it.Visible != (w != "") {
					t.Errorf("item %d = %q (visible %v), want %q", id, it.Title, it.Visible, w)
				}
			}
			for id, w := range tt.want.contains {
				if !strings.Contains(m.Items[id].Title, w) {
					t.Errorf("item %d = %q, want it to contain %q", id, m.Items[id].Title, w)
				}
			}
			for _, id := range []ItemID{ItemServer, ItemServerDetail, ItemVision, ItemRemote, ItemProgress} {
				if m.Items[id].Enabled {
					t.Errorf("status line %d is clickable", id)
				}
			}
			for _, id := range []ItemID{ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff} {
				if got := m.Items[id].Checked; got != (id == tt.want.checked) {
					t.Errorf("choice %q checked=%v", m.Items[id].Title, got)
				}
				wantOn := tt.want.choicesOn
				if id == ItemVisionRemote && tt.want.remoteSetup {
					wantOn = true
				}
				if m.Items[id].Enabled != wantOn {
					t.Errorf("choice %q enabled=%v, want %v", m.Items[id].Title, m.Items[id].Enabled, wantOn)
				}
			}
			if m.Items[ItemRestart].Enabled != tt.want.restartOn {
				t.Errorf("Restart enabled=%v", m.Items[ItemRestart].Enabled)
			}
			if m.Items[ItemOpenBrowser].Enabled != tt.want.browserOn {
				t.Errorf("Open in the browser enabled=%v", m.Items[ItemOpenBrowser].Enabled)
			}
			for _, id := range []ItemID{ItemViewLogs, ItemSetup, ItemAutostart, ItemQuit} {
				if !m.Items[id].Enabled || !m.Items[id].Visible {
					t.Errorf("%q must always be there", m.Items[id].Title)
				}
			}
			if n := len([]rune(m.Tooltip)); n == 0 || n > 127 {
				t.Errorf("tooltip %q has %d characters", m.Tooltip, n)
			}
		})
	}
}

// Build is pure: the menu is a function of the Input alone. It does not
// change its input, carries nothing from one call to the next (each input
// gives the same menu whatever was built before it), and takes the time
// from in.Now, never the clock (t0 is days away from the wall clock, so a
// line computed from time.Now would differ from the one expected here).
func TestBuildIsPure(t *testing.T) {
	inputs := []func() Input{
		func() Input { return Input{Now: t0, State: ready(), RemoteName: "gpu-laptop", Autostart: true} },
		func() Input {
			return Input{Now: t0, State: with(func(s *controlapi.State) {
				s.Server.Phase, s.Server.Since = controlapi.PhaseStarting, t0.Add(-90*time.Second)
			}), Pending: &Pending{Action: "restart", Started: t0.Add(-time.Minute)}}
		},
		func() Input {
			return Input{Now: t0, State: with(func(s *controlapi.State) { s.Remote.Reachable, s.Remote.Reason = false, "timed out" }),
				RemoteName: "gpu-laptop", FallbackCPU: true, Relay: RelayView{LastWhere: "cpu", LastMS: 900, LastAt: t0.Add(-time.Minute), Failovers: 1}}
		},
		func() Input { return Input{Now: t0, Reach: Unreachable, Problem: "the service does not answer"} },
	}
	first := make([]Menu, len(inputs))
	for i, mk := range inputs {
		in := mk()
		first[i] = Build(in)
		// The input is as it was made: Build changed nothing in it.
		if want := mk(); !reflect.DeepEqual(in, want) {
			t.Errorf("input %d: Build changed its input:\n%+v\nwant\n%+v", i, in, want)
		}
	}
	// Built again in the other order: the same menus.
	for i := len(inputs) - 1; i >= 0; i-- {
		if got := Build(inputs[i]()); got != first[i] {
			t.Errorf("input %d: a second Build, after others, gave another menu:\n%+v\nwant\n%+v", i, got, first[i])
		}
	}
	// The time is in.Now's: "for" the 90 s since t0-90s, and another Now
	// gives another line.
	if got, want := first[1].Items[ItemServer].Title, "for "+Duration(90*time.Second); !strings.Contains(got, want) {
		t.Errorf("starting server line %q, want it to say %q (from in.Now, not the clock)", got, want)
	}
	later := inputs[1]()
	later.Now = t0.Add(time.Hour)
	if Build(later).Items[ItemServer].Title == first[1].Items[ItemServer].Title {
		t.Error("an hour later by in.Now, the same starting line: the menu does not follow in.Now")
	}
	// Autostart is the input's: the check mark follows it.
	if !first[0].Items[ItemAutostart].Checked {
		t.Error("autostart on is not checked")
	}
	off := inputs[0]()
	off.Autostart = false
	if Build(off).Items[ItemAutostart].Checked {
		t.Error("autostart off is checked")
	}
}

func TestTooltip(t *testing.T) {
	tests := []struct {
		st   *controlapi.State
		want string
	}{
		{ready(), "Strata: ready · Qwen3.6-35B-A3B IQ2_XS · vision on the second PC (gpu-laptop), encoder ready"},
		{with(func(s *controlapi.State) { s.Remote.Reachable = false }),
			"Strata: ready · Qwen3.6-35B-A3B IQ2_XS · vision on the second PC (gpu-laptop), not reachable: text only"},
		{with(func(s *controlapi.State) {
			s.Server.Phase, s.Server.Detail = controlapi.PhaseStarting, "filling the expert cache"
			s.Vision = controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderStarting}
		}), "Strata: starting (filling the expert cache) · Qwen3.6-35B-A3B IQ2_XS · vision on the CPU, encoder starting"},
		{with(func(s *controlapi.State) { s.Server.Model = strings.Repeat("x", 200) }), strings.Repeat("x", 0)},
	}
	for i, tt := range tests {
		got := Tooltip(tt.st)
		if i == 3 {
			if len([]rune(got)) != 127 || !strings.HasSuffix(got, "…") {
				t.Errorf("long tooltip not clipped to 127: %d %q", len([]rune(got)), got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("Tooltip = %q\nwant      %q", got, tt.want)
		}
	}
}

func TestBrowserURL(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/"},
		{"http://0.0.0.0:8095/v1", "http://127.0.0.1:8095/"},
		{"https://strata.lan:9000/v1?x=1", "https://strata.lan:9000/"},
		{"", ""},
		{"file:///etc/passwd", ""},
	} {
		if got := BrowserURL(&controlapi.State{Server: controlapi.ServerState{URL: tt.url}}); got != tt.want {
			t.Errorf("BrowserURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
	if got := BrowserURL(&controlapi.State{Server: controlapi.ServerState{Port: 8080}}); got != "http://127.0.0.1:8080/" {
		t.Errorf("from the port alone: %q", got)
	}
}

func TestDurationAndClock(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{-time.Second, "0 s"}, {45 * time.Second, "45 s"}, {12*time.Minute + 30*time.Second, "12 min"},
		{2*time.Hour + 5*time.Minute, "2 h 05 min"}, {50 * time.Hour, "2 d 2 h"}} {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := Clock(t0.Add(-time.Hour), t0); got != "13:00" {
		t.Errorf("today: %q", got)
	}
	if got := Clock(t0.Add(-24*time.Hour), t0); got != "Nov 28 14:00" {
		t.Errorf("yesterday: %q", got)
	}
}

// A service registered before Strata's folder was chosen: a short line that
// says what to do in the tray's own words, and no vision choice the service
// would refuse.
func TestNoInstall(t *testing.T) {
	// What the service reports: its start failed with the finder's error.
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseFailed, LastError: "no Strata install found; looked in C:\\Program Files\\Strata Companion, C:\\Program Files, C:\\, Z:\\. Install Strata (github.com/Niko1221/Strata), or pass --strata-root DIR (the folder holding serve/server.py and engine/)"},
		Config: controlapi.ConfigInfo{Problem: "no Strata install found; looked in C:\\Strata, C:\\Users\\sam\\Strata, D:\\Strata, E:\\Strata, F:\\Strata. Install Strata (github.com/Niko1221/Strata), or pass --strata-root DIR (the folder holding serve/server.py and engine/)"}}
	m := Build(Input{Now: t0, State: st, Reach: Connected})
	d := m.Items[ItemServerDetail]
	if !d.Visible || !strings.Contains(d.Title, "Open setup") || strings.Contains(d.Title, "--") {
		t.Errorf("detail %q: want the setup named, no command-line flags", d.Title)
	}
	for _, id := range []ItemID{ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff} {
		if it := m.Items[id]; it.Enabled {
			t.Errorf("%q is enabled with no install", it.Title)
		}
	}
	if !m.Items[ItemSetup].Enabled {
		t.Error("Open setup... must stay enabled")
	}
	if m.Items[ItemRestart].Enabled {
		t.Error("Restart Strata enabled with nothing to start")
	}
	if m.Icon == assets.TrayError || strings.Contains(m.Items[ItemServer].Title+m.Tooltip, "failed") {
		t.Errorf("no install yet shown as a failure: %s, %q", m.Icon, m.Items[ItemServer].Title)
	}
}

// No status line is wider than DetailWidth characters: the menu is as wide
// as its widest line.
func TestDetailLinesAreShort(t *testing.T) {
	long := strings.Repeat("the engine said something rather long about what went wrong, ", 6)
	for _, in := range []Input{
		{Now: t0, Reach: Unreachable, Problem: "  " + long},
		{Now: t0, Reach: Connected, State: with(func(s *controlapi.State) { s.Server.Phase, s.Server.LastError = controlapi.PhaseFailed, long })},
		{Now: t0, Reach: Connected, State: with(func(s *controlapi.State) {
			s.Server.Phase, s.Config.Valid, s.Config.Problem = controlapi.PhaseStopped, false, long
		})},
	} {
		d := Build(in).Items[ItemServerDetail]
		if n := len([]rune(d.Title)); n > DetailWidth || !strings.HasSuffix(d.Title, "…") {
			t.Errorf("detail of %d characters (max %d), not marked as cut: %q", n, DetailWidth, d.Title)
		}
	}
}

// Where the probe says this PC's GPU cannot read pictures, its item is off
// and says why; the others stay.
func TestGPUImpossible(t *testing.T) {
	st := with(func(s *controlapi.State) { s.Vision.Placement, s.Remote = "cpu", nil })
	m := Build(Input{Now: t0, State: st, Reach: Connected, NoGPUVision: "no NVIDIA GPU"})
	if g := m.Items[ItemVisionGPU]; g.Enabled || !strings.Contains(g.Title, "no NVIDIA GPU") {
		t.Errorf("GPU item %+v", g)
	}
	if !m.Items[ItemVisionOff].Enabled {
		t.Error("Vision: off should stay enabled")
	}
	if g := Build(Input{Now: t0, State: st, Reach: Connected}).Items[ItemVisionGPU]; !g.Enabled {
		t.Error("without the probe's word the GPU item stays enabled")
	}
}

// TestVisionChoicesAreThePlacementsTable: the menu's vision choices are
// settings.Placements, in its order, titled with its menu words; the
// second PC's unpaired item and the GPU's "cannot" note follow the table's
// second-PC and uses-VRAM fields.
func TestVisionChoicesAreThePlacementsTable(t *testing.T) {
	ids := []ItemID{ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff}
	if len(ids) != len(settings.Placements) {
		t.Fatalf("%d vision items for %d placements", len(ids), len(settings.Placements))
	}
	st := ready()
	st.Vision.Placement = string(settings.PlacementOff)
	m := Build(Input{State: st, Reach: Connected, RemoteName: "gpu-laptop", NoGPUVision: "too little VRAM"})
	for i, id := range ids {
		p := settings.Placements[i]
		if id.Placement() != string(p.ID) {
			t.Errorf("item %d stands for %q, the table's row %d is %q", id, id.Placement(), i, p.ID)
		}
		want := "Vision: " + p.ID.MenuName("gpu-laptop")
		if p.UsesVRAM {
			want += " (too little VRAM)"
		}
		if got := m.Items[id].Title; got != want {
			t.Errorf("%s: title %q, want %q", p.ID, got, want)
		}
	}
	m = Build(Input{State: st, Reach: Connected})
	if got := m.Items[ItemVisionRemote].Title; got != "Vision: second PC (not set up: set up...)" {
		t.Errorf("unpaired second PC: %q", got)
	}
}
