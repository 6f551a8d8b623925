package pages

// Trial pictures on the Pictures page: a "Measure here" button per place,
// a progress line with the elapsed time and a Cancel that stops the
// encoder, where and when the figures were measured (the figures take the
// estimate's place in the option's line: "14.2 s per picture, measured here
// · start 3.1 s"), a small bar chart of the three times, and the estimates'
// long explanation behind "How this was estimated".

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// trialState is the Pictures page's running trial (one at a time).
type trialState struct {
	running settings.Placement // "" when none
	cancel  context.CancelFunc
	bar     *widget.ProgressBarInfinite
	text    *widget.Label
	// onEnd is called once when the running trial ends (the autopilot).
	onEnd func()
}

// picturesPage is the Pictures page's trial state and how to redraw it
// (the autopilot drives trials through it).
type picturesPage struct {
	ts      *trialState
	rebuild func()
	scroll  *container.Scroll
}

// figuresLabel is an option's figures in one bold line (nil when it has
// none): the measured ones, in the success colour, once it was measured.
func figuresLabel(o setupflow.Option) fyne.CanvasObject {
	details := strings.Join(o.Figures(), " · ")
	if details == "" {
		return nil
	}
	l := widget.NewLabelWithStyle(details, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	if o.Measured != nil {
		l.Importance = widget.SuccessImportance
	}
	return l
}

// trial is the trial shown for p (this run's, else the one kept; nil: none).
func (u *UI) trial(p settings.Placement) *setupflow.Trial {
	trials, _ := u.Flow.Measure.Trials()
	return trials[p]
}

// trialRow is what an option shows about trials: its measured figures or
// why the trial failed, the Measure button, and while it runs the progress
// and Cancel.
func (u *UI) trialRow(o setupflow.Option, ts *trialState, rebuild func()) fyne.CanvasObject {
	box := container.NewVBox()
	if !u.Flow.Measure.Available() || !o.Available || !o.Placement.ReadsPictures() || o.Device != nil {
		return box
	}
	// The measured figures themselves are the option's (o.Figures, above
	// this row): here is where and when they were measured.
	trials, errs := u.Flow.Measure.Trials()
	if t := trials[o.Placement]; t != nil {
		when := t.Time()
		sub := "Measured on " + t.Device
		if !when.IsZero() {
			sub += ", " + when.Local().Format("2 Jan 2006 15:04")
		}
		if t.StrataVersion != "" {
			sub += ", Strata " + t.StrataVersion
		}
		s := para(sub + ". The start is paid once; the picture time every time.")
		s.Importance = widget.LowImportance
		box.Add(s)
		if t.Note != "" {
			n := para(t.Note)
			n.Importance = widget.WarningImportance
			box.Add(n)
		}
	}
	if err := errs[o.Placement]; err != nil {
		l := para("The trial picture failed: " + err.Error())
		l.Importance = widget.WarningImportance
		box.Add(l)
	}
	if ts.running == o.Placement {
		cancel := widget.NewButtonWithIcon("Cancel the trial", theme.CancelIcon(), func() {
			if ts.cancel != nil {
				ts.cancel()
			}
		})
		box.Add(container.NewBorder(nil, nil, nil, cancel, container.NewVBox(ts.bar, ts.text)))
		return box
	}
	label := "Measure here"
	if trials[o.Placement] != nil {
		label = "Measure again"
	}
	b := widget.NewButtonWithIcon(label, theme.MediaPlayIcon(), func() { u.startTrial(o.Placement, ts, rebuild) })
	if ts.running != "" {
		b.Disable()
	}
	hint := para("Reads one 1024x1024 picture there, as Strata would.")
	hint.Importance = widget.LowImportance
	box.Add(container.NewBorder(nil, nil, b, nil, hint))
	return box
}

func (u *UI) startTrial(p settings.Placement, ts *trialState, rebuild func()) {
	ctx, cancel := context.WithCancel(u.ctx)
	ts.running, ts.cancel = p, cancel
	ts.bar = widget.NewProgressBarInfinite()
	ts.text = widget.NewLabel("Starting the encoder...")
	rebuild()
	u.goAsync(func() {
		defer cancel()
		_, err := u.Flow.Measure.Run(ctx, p, func(pr setupflow.TrialProgress) {
			u.do(func() {
				if ts.running != p || ts.text == nil {
					return
				}
				what := "Starting the encoder"
				if pr.Phase == "reading" {
					what = "Reading the picture"
				}
				ts.text.SetText(fmt.Sprintf("%s: %.1f s (stops after %s)", what, pr.Elapsed.Seconds(), minutes(pr.Bound)))
			})
		})
		// Read now: by the time the UI runs the update below, this
		// goroutine's deferred cancel has ended ctx whatever happened.
		cancelled := err != nil && (isCancel(err) || ctx.Err() != nil)
		u.do(func() {
			ts.running, ts.cancel = "", nil
			u.setHint("") // a failure is said under its option
			if cancelled {
				u.setHint("The trial was cancelled; the encoder was stopped and nothing was measured.")
			}
			rebuild()
			if f := ts.onEnd; f != nil {
				ts.onEnd = nil
				f()
			}
		})
	})
}

func minutes(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%.0f min", d.Minutes())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

// chartRow is one bar of the chart.
type chartRow struct {
	label string
	fig   settings.PictureFigure
}

// timesChart is a small bar chart of the time per picture of each place:
// the measured figure where there is one, else the estimate (paler).
func (u *UI) timesChart(rec setupflow.Recommendation) fyne.CanvasObject {
	var rows []chartRow
	for _, o := range rec.Options {
		if !o.Available || !o.Placement.ReadsPictures() || o.Device != nil {
			continue
		}
		r := chartRow{label: o.Label, fig: o.Picture()}
		if r.fig.Seconds > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return chart(rows)
}

// chartWidth is the longest bar, in fyne units.
const chartWidth = 320

func chart(rows []chartRow) fyne.CanvasObject {
	longest := 0.0
	for _, r := range rows {
		longest = math.Max(longest, r.fig.Seconds)
	}
	grid := container.NewVBox()
	labels := container.NewVBox()
	for _, r := range rows {
		w := float32(chartWidth * r.fig.Seconds / longest)
		if w < 3 {
			w = 3
		}
		c := theme.Color(theme.ColorNamePrimary)
		if r.fig.Measured == nil {
			c = withAlpha(c, 0x60)
		}
		bar := canvas.NewRectangle(c)
		bar.SetMinSize(fyne.NewSize(w, 18))
		pad := canvas.NewRectangle(color.Transparent)
		pad.SetMinSize(fyne.NewSize(chartWidth-w, 18))
		value := widget.NewLabel(r.fig.Short())
		labels.Add(widget.NewLabel(r.label))
		grid.Add(container.NewHBox(container.NewCenter(container.NewHBox(bar, pad)), value))
	}
	return container.NewVBox(bold("Time per picture"), container.NewHBox(labels, grid))
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

// estimateDetails is the estimates' long explanation, folded away.
func estimateDetails(rec setupflow.Recommendation) fyne.CanvasObject {
	box := container.NewVBox()
	if rec.Basis != "" {
		box.Add(para("The estimates rest on " + rec.Basis + "."))
	}
	for _, o := range rec.Options {
		// A measured place shows no estimate, so its estimate's
		// explanation is not said either.
		if o.Note == "" || !o.Available || o.Measured != nil {
			continue
		}
		box.Add(para(o.Label + ": " + o.Note))
	}
	if len(box.Objects) == 0 {
		return nil
	}
	return widget.NewAccordion(widget.NewAccordionItem("How this was estimated", box))
}
