package traymodel

import (
	"strings"
	"time"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/lendshown"
)

// The lending rows' fixed words (the tray's tests find the items by them).
const (
	LendTitle      = "Lend this PC's GPU"
	NewCodeTitle   = LendTitle + ": Get a new pairing code..."
	StopLendTitle  = "Stop lending..."
	LendActionCode = "code" // Input.LendAction: `strata-service lend code` runs
	LendActionStop = "stop" // Input.LendAction: `strata-service lend stop` runs
)

// LenderOnly reports a PC that lends its GPU and runs no Strata Companion
// service (a gaming laptop lending to the PC that runs Strata): the menu is
// lending's alone, without Strata's status and actions, and it needs no
// control API.
func LenderOnly(in Input) bool {
	return in.Lending != nil && in.Reach == NotRunning
}

// buildLend fills the lending rows: the code (or the item that gets a new
// one), the PCs paired, Stop lending. All hidden when this PC does not lend.
func buildLend(m *Menu, in Input) {
	l := in.Lending
	if l == nil {
		for _, id := range []ItemID{ItemLendCode, ItemLendPaired, ItemLendStop} {
			m.Items[id] = Item{Visible: false}
		}
		return
	}
	busy := in.LendAction != ""
	code := Item{Title: NewCodeTitle, Visible: true, Enabled: !busy}
	switch {
	case in.LendAction == LendActionCode:
		code = Item{Title: LendTitle + ": getting a new pairing code...", Visible: true}
	case l.CodeAt(in.Now) != "":
		code = Item{Title: LendTitle + ": pairing code " + l.Code + " (until " + Clock(l.Expires, in.Now) + ")", Visible: true}
	}
	m.Items[ItemLendCode] = code
	paired := "  No PC paired yet: type the code in the setup of the PC that runs Strata"
	if len(l.Paired) > 0 {
		paired = "  Paired: " + strings.Join(l.Paired, ", ")
	}
	m.Items[ItemLendPaired] = Item{Title: clipTo(paired, DetailWidth), Visible: true}
	stop := Item{Title: StopLendTitle, Visible: true, Enabled: !busy}
	if in.LendAction == LendActionStop {
		stop.Title = "Stopping lending..."
	}
	m.Items[ItemLendStop] = stop
}

// lenderOnly turns the menu into a lender's: the first line says this PC
// lends, and Strata's rows (which need a Strata service) are hidden.
func lenderOnly(m *Menu, in Input) {
	name := ""
	if in.Lending.Name != "" {
		name = " as " + in.Lending.Name
	}
	m.Items[ItemServer] = Item{Title: "Strata Companion: this PC lends its GPU" + name, Visible: true}
	for _, id := range []ItemID{ItemServerDetail, ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff,
		ItemFallback, ItemModel, ItemRepair, ItemRestart, ItemUnload, ItemUpdate, ItemOpenBrowser} {
		m.Items[id] = Item{Visible: false}
	}
	for i := 0; i < MaxModels; i++ {
		m.Items[ItemModel0+ItemID(i)] = Item{Visible: false}
	}
	m.Icon = assets.TrayReady
	tip := "Strata Companion: lending this PC's GPU" + name
	if c := in.Lending.CodeAt(in.Now); c != "" {
		tip += " · pairing code " + c
	}
	m.Tooltip = clip(tip)
}

// DecideStopLending is the question before Stop lending: the paired PCs
// lose this GPU, and what lending changed is put back.
func DecideStopLending(l *lendshown.Shown) Decision {
	who := "The pairing code stops working"
	if l != nil && len(l.Paired) > 0 {
		who = strings.Join(l.Paired, ", ") + " can no longer read pictures here (their keys are removed)"
	}
	q := "Stop lending this PC's GPU? " + who + ", and the ssh server goes back to how it was before lending. It needs administrator rights."
	return Decision{Confirm: true, Question: q + " Continue?", Explain: q}
}

// lendNextChange is when the lending rows change by themselves: the code's
// expiry (0 when no code is valid).
func lendNextChange(in Input, now time.Time) time.Duration {
	if in.Lending.CodeAt(now) == "" {
		return 0
	}
	return in.Lending.Expires.Sub(now)
}
