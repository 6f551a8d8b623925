package pages_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"

	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

func bigCode(h *harness) string {
	c := find(h.win.Content(), func(t *canvas.Text) bool { return t.Visible() && len(t.Text) == 9 && t.Text[4] == '-' })
	if c == nil {
		return ""
	}
	return c.Text
}

// The first page's role "Lend this PC's GPU to another PC": Next starts
// lending at once and shows the code big, New code shows another, Stop
// lending stops, Back returns to the Welcome page, Close closes.
func TestLendThisPCsGPU(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h := start(t, w, setupflow.Options{})
	t.Cleanup(h.ui.Close)
	h.must("What should this PC do?", "Set up Strata Companion here", setupflow.LendRoleLabel)
	findRadio(h.win.Content(), setupflow.LendRoleLabel).SetSelected(setupflow.LendRoleLabel)
	h.settle()
	test.Tap(h.ui.NextButton())
	h.settleUntil(func() bool { return bigCode(h) != "" })
	if got := bigCode(h); got != demo.LendCode.String() {
		t.Fatalf("the code shown is %q, want %s", got, demo.LendCode)
	}
	if !slices.Contains(w.Calls(), "lend-start") {
		t.Errorf("lending not started: %q", w.Calls())
	}
	h.must("Lend this PC's GPU", `choose "A second PC"`, "pick gaming-laptop", "It works once", "[New code]", "[Stop lending]", "[Close]",
		"Closing this window does not stop lending")
	if h.ui.NextButton().Visible() || findButton(h.win.Content(), "Start lending").Disabled() == false {
		t.Error("Next, or Start lending, is offered while lending")
	}
	if strings.Contains(h.text(), "--") {
		t.Errorf("command-line words in the lending view:\n%s", h.text())
	}
	test.Tap(findButton(h.win.Content(), "New code"))
	h.settleUntil(func() bool { return bigCode(h) == demo.LendCode2.String() })
	test.Tap(findButton(h.win.Content(), "Stop lending"))
	h.settleUntil(func() bool { return strings.Contains(h.text(), "no longer lends its GPU") })
	if bigCode(h) != "" || findButton(h.win.Content(), "Start lending").Disabled() {
		t.Errorf("after Stop lending: code %q, Start lending disabled %t", bigCode(h), findButton(h.win.Content(), "Start lending").Disabled())
	}
	test.Tap(h.ui.BackButton())
	h.settle()
	h.must("Welcome to Strata Companion", "[Next]", "[Cancel]")
	if h.ui.Page() != setupflow.PageWelcome {
		t.Errorf("Back went to %s", h.ui.Page())
	}
	findRadio(h.win.Content(), setupflow.LendRoleLabel).SetSelected(setupflow.LendRoleLabel)
	test.Tap(h.ui.NextButton())
	h.settleUntil(func() bool { return bigCode(h) != "" })
	test.Tap(h.ui.CancelButton())
	if !h.closed {
		t.Error("Close did not close the lending view")
	}
}

// A refused permission says so and offers Start lending again; nothing
// of the setup's own steps ran.
func TestLendRefused(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Fail["lend-start"] = errors.New("Windows did not get an administrator's permission, so nothing was changed: try again and answer Yes")
	h := start(t, w, setupflow.Options{})
	t.Cleanup(h.ui.Close)
	h.ui.ShowLending()
	h.settle()
	h.must("Lend this PC's GPU", "Start lending asks for an administrator's permission once", "[Start lending]")
	if slices.Contains(w.Calls(), "lend-start") {
		t.Error("--page lend started lending before the button")
	}
	test.Tap(findButton(h.win.Content(), "Start lending"))
	h.settle()
	h.must("did not get an administrator's permission", "answer Yes")
	if b := findButton(h.win.Content(), "Start lending"); b.Disabled() {
		t.Error("Start lending is not offered again")
	}
	for _, c := range w.Calls() {
		if strings.HasPrefix(c, "install") || strings.HasPrefix(c, "write") {
			t.Errorf("lending ran a setup step: %s", c)
		}
	}
}
