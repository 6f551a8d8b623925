package pages_test

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// findButtons lists the visible buttons labelled text, in page order.
func findButtons(o fyne.CanvasObject, text string, out *[]*widget.Button) {
	if o == nil || !o.Visible() {
		return
	}
	switch w := o.(type) {
	case *widget.Button:
		if w.Text == text {
			*out = append(*out, w)
		}
		return
	case *fyne.Container:
		for _, c := range w.Objects {
			findButtons(c, text, out)
		}
		return
	case *widget.Label:
		return
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(w).Objects() {
			findButtons(c, text, out)
		}
	}
}

// measureButton is the Measure button of the i-th placement (the demo's
// order: this PC's GPU, its CPU, a second PC).
func (h *harness) measureButton(i int) *widget.Button {
	h.t.Helper()
	var bs []*widget.Button
	findButtons(h.win.Content(), "Measure here", &bs)
	findButtons(h.win.Content(), "Measure again", &bs)
	if len(bs) != 3 {
		h.t.Fatalf("%d Measure buttons, want one per place (GPU, CPU, second PC):\n%s", len(bs), h.text())
	}
	return bs[i]
}

func toPlacement(t *testing.T, w *demo.World) *harness {
	h := start(t, w, setupflow.Options{})
	h.next(setupflow.PageFindStrata)
	h.next(setupflow.PageThisPC)
	h.next(setupflow.PagePlacement)
	return h
}

// TestPicturesPageMeasures: before a trial the page shows estimates in
// short words, the chart of estimates and the details folded away; a
// trial on the CPU shows its measured figures and start apart, puts them
// in the chart, recommends from them, Review says the chosen place's
// measured figure, and Apply keeps them in the settings.
func TestPicturesPageMeasures(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h := toPlacement(t, w)
	h.must("Time per picture", "1.6 s (estimate)", "How this was estimated", setupflow.TextWaits, "Recommended: This PC's GPU")
	if strings.Contains(h.text(), "RTX 5080") || strings.Contains(h.text(), "Strata's measurements") {
		t.Errorf("the reference machine shows outside the details:\n%s", h.text())
	}

	test.Tap(h.measureButton(1)) // this PC's CPU
	h.settle()
	// Issue 40: the measured figure takes the estimate's place: the CPU's
	// "about 15 s" is no longer said beside "11.8 s", nor explained.
	h.must("11.8 s per picture, measured here · start 0.40 s", "Measured on this PC's CPU, 8 threads", "Strata 0.9.3",
		"11.8 s (measured)", "[Measure again]")
	if txt := h.text(); strings.Contains(txt, "about 15 s per picture") || strings.Contains(txt, "15 s (estimate)") ||
		strings.Contains(txt, "This PC's CPU: ") {
		t.Errorf("the CPU's estimate is still shown beside its measured figure:\n%s", txt)
	}
	test.Tap(h.measureButton(0)) // this PC's GPU
	h.settle()
	h.must("1.4 s per picture, measured here · start 2.9 s", "1.4 s (measured)",
		"From the figures measured here: This PC's GPU", "measured here: 1.4 s per picture on this PC's GPU")

	findRadio(h.win.Content(), "This PC's CPU").SetSelected("This PC's CPU")
	h.settle()
	h.next(setupflow.PageReview)
	// Review says the measured figure of the chosen place, not its estimate.
	h.must("Pictures are read on this PC's CPU, 11.8 s per picture, measured here")
	h.next(setupflow.PageApply)
	if w.Settings == nil {
		t.Fatal("nothing applied")
	}
	for p, want := range map[settings.Placement]float64{settings.PlacementCPU: 11.8, settings.PlacementGPU: 1.42} {
		if m := w.Settings.LastMeasured(p); m == nil || m.PictureS != want || m.Check() != nil {
			t.Errorf("Apply kept %s as %+v", p, m)
		}
	}
}

// TestPicturesPageTrialFailsAndCancels: a failed trial says why under its
// place and the estimates stay; Cancel in the middle stops it, says so,
// and keeps nothing.
func TestPicturesPageTrialFailsAndCancels(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Fail["measure-remote"] = errors.New("the second PC did not read the trial picture: second PC 192.168.1.20 did not answer within 5s")
	h := toPlacement(t, w)
	test.Tap(h.measureButton(2))
	h.settle()
	h.must("The trial picture failed: the second PC did not read the trial picture: second PC 192.168.1.20 did not answer within 5s")
	if strings.Contains(h.ui.Hint(), "cancelled") {
		t.Errorf("a failed trial is called cancelled: %q", h.ui.Hint())
	}

	w.HangAt = "measure"
	test.Tap(h.measureButton(1))
	h.settleUntil(func() bool {
		return strings.Contains(h.text(), "[Cancel the trial]") && strings.Contains(h.text(), "Reading the picture: ")
	})
	h.must("stops after 5 min")
	var others []*widget.Button
	findButtons(h.win.Content(), "Measure here", &others)
	for _, b := range others {
		if !b.Disabled() {
			t.Error("another trial can start while one runs")
		}
	}
	var cancel []*widget.Button
	findButtons(h.win.Content(), "Cancel the trial", &cancel)
	test.Tap(cancel[0])
	h.settle()
	if !strings.Contains(h.ui.Hint(), "cancelled; the encoder was stopped") {
		t.Errorf("hint %q", h.ui.Hint())
	}
	if trials, errs := h.ui.Flow.Measure.Trials(); trials[settings.PlacementCPU] != nil || errs[settings.PlacementCPU] != nil {
		t.Errorf("a cancelled trial was kept: %v %v", trials, errs)
	}
	h.must("[Measure here]")
}
