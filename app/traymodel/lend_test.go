package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/lendshown"
)

func lending(code string, expires time.Time, paired ...string) *lendshown.Shown {
	return &lendshown.Shown{Name: "gpu-laptop", Code: code, Expires: expires, Paired: paired}
}

// The lending rows for each state of lending, on a PC that lends alone (no
// service: lending's menu, nothing of Strata's) and on one that also runs
// the service (both).
func TestLendMenu(t *testing.T) {
	// Strata's rows that a menu with a service (or one expected) always has.
	strata := []ItemID{ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff, ItemRestart, ItemOpenBrowser}
	always := []ItemID{ItemViewLogs, ItemSetup, ItemAutostart, ItemQuit}
	type row struct {
		title   string
		enabled bool
	}
	tests := []struct {
		name       string
		in         Input
		server     string // the first line
		code       row
		paired     string
		stop       row
		strataRows bool // Strata's rows shown
		icon       string
		tooltip    string // a substring ("" when not checked)
	}{
		{"lending alone, a valid code, one PC paired",
			Input{Reach: NotRunning, Problem: "  Open setup... to install it", Lending: lending("ABCD-EFGH", t0.Add(8*time.Minute), "strata-pc")},
			"Strata Companion: this PC lends its GPU as gpu-laptop",
			row{"Lend this PC's GPU: pairing code ABCD-EFGH (until 14:08)", false},
			"  Paired: strata-pc",
			row{"Stop lending...", true}, false, assets.TrayReady, "lending this PC's GPU as gpu-laptop · pairing code ABCD-EFGH"},
		{"lending alone, the code expired: get a new one",
			Input{Reach: NotRunning, Lending: lending("ABCD-EFGH", t0.Add(-time.Second))},
			"Strata Companion: this PC lends its GPU as gpu-laptop",
			row{NewCodeTitle, true},
			"  No PC paired yet: type the code in the setup of the PC that runs Strata",
			row{"Stop lending...", true}, false, assets.TrayReady, "Strata Companion: lending this PC's GPU as gpu-laptop"},
		{"lending alone, no code at all, two PCs paired",
			Input{Reach: NotRunning, Lending: lending("", time.Time{}, "strata-pc", "office-pc")},
			"Strata Companion: this PC lends its GPU as gpu-laptop",
			row{NewCodeTitle, true},
			"  Paired: strata-pc, office-pc",
			row{"Stop lending...", true}, false, assets.TrayReady, ""},
		{"a new code being fetched: both rows wait",
			Input{Reach: NotRunning, Lending: lending("", time.Time{}), LendAction: LendActionCode},
			"Strata Companion: this PC lends its GPU as gpu-laptop",
			row{"Lend this PC's GPU: getting a new pairing code...", false},
			"  No PC paired yet: type the code in the setup of the PC that runs Strata",
			row{"Stop lending...", false}, false, assets.TrayReady, ""},
		{"stopping",
			Input{Reach: NotRunning, Lending: lending("ABCD-EFGH", t0.Add(time.Minute)), LendAction: LendActionStop},
			"Strata Companion: this PC lends its GPU as gpu-laptop",
			row{"Lend this PC's GPU: pairing code ABCD-EFGH (until 14:01)", false},
			"  No PC paired yet: type the code in the setup of the PC that runs Strata",
			row{"Stopping lending...", false}, false, assets.TrayReady, ""},
		{"lending and running Strata: both menus",
			Input{State: ready(), RemoteName: "gpu-laptop", Lending: lending("WXYZ-2345", t0.Add(5*time.Minute))},
			"Strata: ready · Qwen3.6-35B-A3B IQ2_XS · since 11:55",
			row{"Lend this PC's GPU: pairing code WXYZ-2345 (until 14:05)", false},
			"  No PC paired yet: type the code in the setup of the PC that runs Strata",
			row{"Stop lending...", true}, true, assets.TrayReady, "Strata: ready"},
		{"lending, and a service that stopped answering: Strata's rows stay",
			Input{Reach: Unreachable, Problem: "  stopped or restarting", Lending: lending("", time.Time{})},
			"Strata Companion service not reachable",
			row{NewCodeTitle, true},
			"  No PC paired yet: type the code in the setup of the PC that runs Strata",
			row{"Stop lending...", true}, true, assets.TrayOffline, "service not reachable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = t0
			m := Build(tc.in)
			if got := m.Items[ItemServer].Title; got != tc.server {
				t.Errorf("first line %q, want %q", got, tc.server)
			}
			for id, want := range map[ItemID]row{ItemLendCode: tc.code, ItemLendStop: tc.stop} {
				it := m.Items[id]
				if it.Title != tc.code.title && id == ItemLendCode || it.Title != tc.stop.title && id == ItemLendStop || !it.Visible || it.Enabled != want.enabled {
					t.Errorf("item %d = %+v, want %+v", id, it, want)
				}
			}
			if it := m.Items[ItemLendPaired]; it.Title != tc.paired || !it.Visible || it.Enabled {
				t.Errorf("paired row %+v, want the status line %q", it, tc.paired)
			}
			for _, id := range strata {
				if m.Items[id].Visible != tc.strataRows {
					t.Errorf("Strata's row %d %q visible=%v, want %v", id, m.Items[id].Title, m.Items[id].Visible, tc.strataRows)
				}
			}
			if !tc.strataRows {
				// Lending alone: nothing between the status and the tray's own rows but lending's.
				for id := ItemServerDetail; id < ItemViewLogs; id++ {
					if m.Items[id].Visible && id != ItemLendCode && id != ItemLendPaired && id != ItemLendStop {
						t.Errorf("a lender's menu shows row %d %q", id, m.Items[id].Title)
					}
				}
			}
			for _, id := range always {
				if !m.Items[id].Visible || !m.Items[id].Enabled {
					t.Errorf("row %d %q is not offered", id, m.Items[id].Title)
				}
			}
			if m.Icon != tc.icon {
				t.Errorf("icon %s, want %s", m.Icon, tc.icon)
			}
			if !strings.Contains(m.Tooltip, tc.tooltip) || len([]rune(m.Tooltip)) > 127 {
				t.Errorf("tooltip %q, want it to hold %q", m.Tooltip, tc.tooltip)
			}
		})
	}
}

// A PC that does not lend shows no lending row, whatever the service does.
func TestNoLendRowsWithoutLending(t *testing.T) {
	for _, in := range []Input{{State: ready()}, {Reach: NotRunning}, {Reach: Unreachable}} {
		m := Build(in)
		for _, id := range []ItemID{ItemLendCode, ItemLendPaired, ItemLendStop} {
			if m.Items[id].Visible {
				t.Errorf("reach %d: lending row %d shows: %q", in.Reach, id, m.Items[id].Title)
			}
		}
		if LenderOnly(in) {
			t.Errorf("reach %d: a PC that does not lend counts as a lender", in.Reach)
		}
	}
}

// The menu is redrawn when the code expires, also with no service and
// nothing else moving; an expired code moves nothing.
func TestLendNextChangeAtTheCodesExpiry(t *testing.T) {
	in := Input{Reach: NotRunning, Lending: lending("ABCD-EFGH", t0.Add(3*time.Minute))}
	if d := NextChange(in, t0, 5*time.Second); d != 3*time.Minute {
		t.Errorf("a code valid for 3 min: next change in %v", d)
	}
	in.State, in.Reach = ready(), Connected
	if d := NextChange(in, t0, 5*time.Second); d != 3*time.Minute {
		t.Errorf("with a ready server (next change at midnight): %v, want the code's 3 min", d)
	}
	in.Pending = &Pending{Action: "restart", Started: t0}
	if d := NextChange(in, t0, 5*time.Second); d != 5*time.Second {
		t.Errorf("with an action pending: %v, want 5 s", d)
	}
	if d := NextChange(Input{Reach: NotRunning, Lending: lending("ABCD-EFGH", t0.Add(-time.Minute))}, t0, 5*time.Second); d != 0 {
		t.Errorf("an expired code: next change in %v, want none", d)
	}
}

func TestDecideStopLending(t *testing.T) {
	d := DecideStopLending(lending("", time.Time{}, "strata-pc", "office-pc"))
	if !d.Confirm || !strings.HasPrefix(d.Question, "Stop lending this PC's GPU? strata-pc, office-pc can no longer read pictures here") ||
		!strings.HasSuffix(d.Question, " Continue?") || strings.Contains(d.Explain, "Continue?") || !strings.Contains(d.Explain, "administrator") {
		t.Errorf("with two PCs paired: %+v", d)
	}
	if d := DecideStopLending(lending("ABCD-EFGH", t0)); !d.Confirm || !strings.Contains(d.Question, "The pairing code stops working") {
		t.Errorf("with none paired: %+v", d)
	}
}
