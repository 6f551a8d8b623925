package pages

import (
	"context"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/setupflow"
)

// The role "Lend this PC's GPU to another PC", for a PC (a laptop) with no
// Strata: not one of the setup's steps but a view of its own over the
// Welcome page, which Back returns to. Everything it decides is
// setupflow.LendStep's (its View); the lender itself runs as a program of
// its own with an administrator's rights, so closing the window does not
// stop lending.

// lendView is the lending view's widgets (tests and the autopilot).
type lendView struct {
	code                *canvas.Text
	text, paired, err   *widget.Label
	busy                *bar
	start, again, stopB *widget.Button
	refresh             func()
	stop                context.CancelFunc
	last                setupflow.LendState
	quiet               bool // refresh does not settle
}

// LendRefresh is how often the view reads the lender's status again: the
// code it shows, its steps while it starts, the PCs paired.
const LendRefresh = time.Second

// roleLabel is the first page's usual role.
const roleLabel = "Set up Strata Companion here, on the PC that runs Strata"

// roleChoice is the Welcome page's choice of role (nil when this setup
// cannot lend): choosing to lend makes Next open the lending view, which
// starts lending at once.
func (u *UI) roleChoice() fyne.CanvasObject {
	if !u.Flow.Lend.Available() {
		return nil
	}
	r := widget.NewRadioGroup([]string{roleLabel, setupflow.LendRoleLabel}, func(s string) {
		u.onNext = nil
		if s == setupflow.LendRoleLabel {
			u.onNext = func() { u.showLending(true) }
		}
		u.updateButtons()
	})
	r.SetSelected(roleLabel)
	return container.NewVBox(widget.NewSeparator(),
		bold("What should this PC do?"), r,
		para("Lending is for a PC without Strata that has an NVIDIA graphics card (a gaming laptop, say): the PC that runs Strata then reads its pictures there."))
}

// ShowLending opens the lending view (strata-setup --page lend).
func (u *UI) ShowLending() {
	if u.Flow.Lend.Available() {
		u.showLending(false)
	}
}

// showLending shows the lending view; start presses Start lending when
// this PC does not lend yet.
func (u *UI) showLending(start bool) {
	u.leaveLending()
	v := &lendView{
		code:   canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		text:   para(""),
		paired: para(""),
		err:    para(""),
		busy:   newBar(),
		last:   -1,
	}
	v.code.TextSize = theme.TextHeadingSize() * 2.5
	v.code.TextStyle = fyne.TextStyle{Monospace: true}
	v.code.Alignment = fyne.TextAlignCenter
	v.err.Importance = widget.WarningImportance
	v.busy.set(setupflow.Progress{Fraction: -1})
	u.lend = v
	u.onNext, u.refresh = nil, nil
	u.title.SetText("Lend this PC's GPU")
	u.steps.Hide()
	u.setHint("")
	u.next.Hide()
	u.cancelB.SetText("Close")
	u.back.Enable()

	act := func(f func(context.Context) error) {
		// Busy at once; the view's own state once the step has it.
		for _, b := range []*widget.Button{v.start, v.again, v.stopB} {
			b.Disable()
		}
		v.busy.box.Show()
		u.goAsync(func() {
			f(u.ctx) // its failure is the view's Err
			u.do(func() {
				if u.lend == v {
					v.refresh()
				}
			})
		})
	}
	v.start = widget.NewButtonWithIcon("Start lending", theme.MediaPlayIcon(), func() { act(u.Flow.Lend.Start) })
	v.start.Importance = widget.HighImportance
	v.again = widget.NewButtonWithIcon("New code", theme.ViewRefreshIcon(), func() { act(u.Flow.Lend.NewCode) })
	v.stopB = widget.NewButtonWithIcon("Stop lending", theme.MediaStopIcon(), func() { act(u.Flow.Lend.Stop) })
	enable := func(b *widget.Button, on bool) {
		if on {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	v.refresh = func() {
		lv := u.Flow.Lend.View(time.Now())
		v.code.Text = lv.Code
		v.code.Refresh()
		if lv.Code == "" {
			v.code.Hide()
		} else {
			v.code.Show()
		}
		v.text.SetText(lv.Text)
		v.paired.SetText(lv.Paired)
		v.err.SetText(lv.Err)
		for _, l := range []*widget.Label{v.paired, v.err} {
			if l.Text == "" {
				l.Hide()
			} else {
				l.Show()
			}
		}
		if lv.Busy != "" {
			v.busy.box.Show()
			v.busy.set(setupflow.Progress{Fraction: -1, Text: lv.Busy})
		} else {
			v.busy.inf.Stop()
			v.busy.box.Hide()
		}
		enable(v.start, lv.CanStart)
		enable(v.again, lv.CanNewCode)
		enable(v.stopB, lv.CanStop)
		// A state reached and nothing running: the view has settled
		// (the autopilot's picture).
		if lv.Busy == "" && lv.State != v.last && !v.quiet {
			v.last = lv.State
			u.settled()
		}
	}
	ctx, stop := context.WithCancel(u.ctx)
	v.stop = stop
	go func() { // not u.goAsync: it runs as long as the view is shown
		t := time.NewTicker(LendRefresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				u.do(func() {
					if u.lend == v {
						v.refresh()
					}
				})
			}
		}
	}()
	box := container.NewVBox(v.busy.box, v.code, v.text, v.paired, v.err,
		container.NewHBox(v.start, v.again, v.stopB),
		widget.NewSeparator(),
		para("Closing this window does not stop lending: this PC lends its GPU until Stop lending (open this setup again to get a new code or to stop)."))
	u.body.Objects = []fyne.CanvasObject{container.NewVScroll(box)}
	u.body.Refresh()
	if start && u.Flow.Lend.View(time.Now()).State == setupflow.LendOff {
		v.quiet = true // a view about to start is no picture yet
		v.refresh()
		v.quiet = false
		v.start.OnTapped()
	} else {
		v.refresh()
	}
}

// LendState is the lending view's state (nil view: not shown).
func (u *UI) lendState() (setupflow.LendState, bool) {
	if u.lend == nil {
		return 0, false
	}
	return u.lend.last, true
}

// leaveLending ends the lending view (its status reads) and gives the
// wizard's steps and buttons back.
func (u *UI) leaveLending() {
	if u.lend == nil {
		return
	}
	u.lend.stop()
	u.lend = nil
	u.steps.Show()
	u.next.Show()
	u.cancelB.SetText("Cancel")
}
