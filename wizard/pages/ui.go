// Package pages is strata-setup's fyne user interface: thin pages over the
// setupflow state machine, which holds every decision. It imports no fyne
// app or driver package, so its tests run on fyne's test driver without the
// GLFW build.
package pages

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// UI is the wizard's window content.
type UI struct {
	Flow *setupflow.Flow
	Win  fyne.Window
	// OnClose ends the program (the window is closed by the caller).
	OnClose func()
	// OnPageShown is called once a page has settled (its automatic step
	// done); the demo's screenshot autopilot uses it.
	OnPageShown func(setupflow.Page)

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	running atomic.Int32
	// do runs a UI update from a background goroutine (fyne.Do).
	do func(func())

	steps   *fyne.Container
	title   *widget.Label
	body    *fyne.Container
	hint    *widget.Label
	back    *widget.Button
	next    *widget.Button
	cancelB *widget.Button
	root    fyne.CanvasObject

	page   setupflow.Page
	onNext func() // a page's own Next (Review: Apply)
	// refresh re-reads the flow into the current page's widgets.
	refresh func()
	modal   *modal
	remoteW remoteWidgets
	codeW   codeWidgets
	// lend is the lending view when it is shown (lend.go), nil otherwise.
	lend *lendView
	pics picturesPage
	// hasSettled: the current page's automatic step is done.
	hasSettled bool
	// onHostKeyShown is the autopilot's hook for the host key question.
	onHostKeyShown func()
}

// remoteWidgets are the Second PC page's inputs (tests and the autopilot).
type remoteWidgets struct {
	addr        *widget.SelectEntry
	user        *widget.Entry
	probe, pair *widget.Button
	idle        *widget.Entry
	fallback    *widget.Check
	scroll      *container.Scroll
}

// New builds the UI for flow in win and shows its first page.
func New(win fyne.Window, flow *setupflow.Flow) *UI { return NewWithDo(win, flow, fyne.Do) }

// NewWithDo is New with the function that hands background results to the
// UI thread; tests pass one that queues them for the test's own goroutine
// (fyne's test driver runs fyne.Do inline, on whatever goroutine calls it).
func NewWithDo(win fyne.Window, flow *setupflow.Flow, do func(func())) *UI {
	u := &UI{Flow: flow, Win: win, do: do}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	u.title.SizeName = theme.SizeNameHeadingText
	u.steps = container.NewHBox()
	u.body = container.NewStack()
	u.hint = widget.NewLabel("")
	u.hint.Wrapping = fyne.TextWrapWord
	u.hint.Importance = widget.WarningImportance
	u.back = widget.NewButtonWithIcon("Back", theme.NavigateBackIcon(), u.Back)
	u.next = widget.NewButtonWithIcon("Next", theme.NavigateNextIcon(), u.Next)
	u.next.IconPlacement = widget.ButtonIconTrailingText
	u.next.Importance = widget.HighImportance
	u.cancelB = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), u.Cancel)
	buttons := container.NewHBox(u.cancelB, layout.NewSpacer(), u.back, u.next)
	header := container.NewVBox(u.steps, u.title, widget.NewSeparator())
	footer := container.NewVBox(widget.NewSeparator(), u.hint, buttons)
	u.root = container.NewPadded(container.NewBorder(header, footer, nil, nil, u.body))
	win.SetContent(u.root)
	win.Canvas().SetOnTypedKey(func(ev *fyne.KeyEvent) {
		switch ev.Name {
		case fyne.KeyEscape:
			if u.modal != nil {
				u.modal.answer(false)
				return
			}
			u.Cancel()
		case fyne.KeyReturn, fyne.KeyEnter:
			if u.modal == nil && !u.next.Disabled() && !u.next.Hidden {
				u.Next()
			}
		}
	})
	u.show(flow.Page())
	if n := flow.Notice(); n != "" {
		u.setHint(n)
	}
	return u
}

// Wait waits for the background work the UI started.
func (u *UI) Wait() { u.wg.Wait() }

// Running is how many background operations are still going (tests).
func (u *UI) Running() int { return int(u.running.Load()) }

// Page is the page shown.
func (u *UI) Page() setupflow.Page { return u.page }

// NextButton, BackButton, CancelButton are for tests and the autopilot.
func (u *UI) NextButton() *widget.Button   { return u.next }
func (u *UI) BackButton() *widget.Button   { return u.back }
func (u *UI) CancelButton() *widget.Button { return u.cancelB }

// Hint is the text under the page (errors and what to do).
func (u *UI) Hint() string { return u.hint.Text }

// goAsync runs fn off the UI thread; fn reports back with fyne.Do.
func (u *UI) goAsync(fn func()) {
	u.wg.Add(1)
	u.running.Add(1)
	go func() {
		defer u.wg.Done()
		defer u.running.Add(-1)
		fn()
	}()
}

func (u *UI) setHint(s string) {
	u.hint.SetText(s)
	if s == "" {
		u.hint.Hide()
	} else {
		u.hint.Show()
	}
}

// updateButtons enables Next/Back from the flow's own rules.
func (u *UI) updateButtons() {
	if u.Flow.CanBack() {
		u.back.Enable()
	} else {
		u.back.Disable()
	}
	if u.page == setupflow.PageDone {
		u.next.Enable()
		return
	}
	if u.onNext != nil || u.Flow.CanNext() == nil {
		u.next.Enable()
	} else {
		u.next.Disable()
	}
}

// Next moves on (or runs the page's own Next, such as Apply).
func (u *UI) Next() {
	if u.page == setupflow.PageDone {
		u.close()
		return
	}
	if u.onNext != nil {
		u.onNext()
		return
	}
	p, err := u.Flow.Next()
	if err != nil {
		u.setHint(err.Error())
		return
	}
	u.show(p)
}

// Back returns to the previous page.
func (u *UI) Back() {
	if u.lend != nil { // the lending view lies over the Welcome page
		u.show(u.Flow.Page())
		return
	}
	p, err := u.Flow.Back()
	if err != nil {
		u.setHint(err.Error())
		return
	}
	u.show(p)
}

// Cancel asks, then stops everything; before Apply nothing was changed.
func (u *UI) Cancel() {
	if u.Flow.Cancelled() {
		return
	}
	if u.page == setupflow.PageDone || u.lend != nil {
		u.close() // lending goes on after the window; the view says so
		return
	}
	msg := "Close setup? Nothing on this PC has been changed yet."
	if u.page == setupflow.PageApply && u.Flow.Busy() != "" {
		msg = "Stop now? Everything setup changed so far will be put back as it was."
	}
	u.confirm("Cancel setup", para(msg), "Cancel setup", "Keep going", func(ok bool) {
		if !ok {
			return
		}
		u.cancelB.Disable()
		u.next.Disable()
		u.back.Disable()
		u.setHint("Cancelling...")
		u.goAsync(func() {
			res := u.Flow.Cancel()
			u.do(func() {
				if u.page == setupflow.PageApply || res.Changed {
					u.inform("Setup cancelled", strings.Join(res.Messages, "\n"), u.close)
					return
				}
				u.close()
			})
		})
	})
}

func (u *UI) close() {
	u.cancel()
	if u.OnClose != nil {
		u.OnClose()
	}
}

// Close stops background work (the window is closing).
func (u *UI) Close() {
	u.cancel()
	if u.Flow.Busy() != "" && !u.Flow.Cancelled() {
		u.Flow.Cancel()
	}
}

var stepPages = []setupflow.Page{setupflow.PageWelcome, setupflow.PageFindStrata, setupflow.PageThisPC, setupflow.PagePlacement, setupflow.PageSecondPC, setupflow.PageReview, setupflow.PageApply, setupflow.PageDone}

func shortTitle(p setupflow.Page) string {
	switch p {
	case setupflow.PagePlacement:
		return "Pictures"
	case setupflow.PageFindStrata:
		return "Strata"
	}
	return p.Title()
}

func (u *UI) showSteps() {
	u.steps.RemoveAll()
	for i, p := range stepPages {
		l := widget.NewLabel(fmt.Sprintf("%d %s", i+1, shortTitle(p)))
		switch {
		case p == u.page:
			// Bold in the text colour: fyne's primary blue is 4.5:1 on
			// neither theme's background (4.47 and 4.01:1).
			l.TextStyle.Bold = true
		case p > u.page:
			l.Importance = widget.LowImportance
		case p == setupflow.PageSecondPC && u.Flow.Choice.Current().Placement != settings.PlacementRemote:
			l.Importance = widget.LowImportance // skipped: pictures are not read on a second PC
		}
		u.steps.Add(l)
	}
}

// show builds page p.
func (u *UI) show(p setupflow.Page) {
	u.leaveLending()
	u.page = p
	u.hasSettled = false
	u.onNext, u.refresh = nil, nil
	u.setHint("")
	u.title.SetText(p.Title())
	u.showSteps()
	u.next.SetText("Next")
	u.next.SetIcon(theme.NavigateNextIcon())
	u.cancelB.Show()
	u.back.Show()
	var content fyne.CanvasObject
	switch p {
	case setupflow.PageWelcome:
		content = u.welcomePage()
	case setupflow.PageFindStrata:
		content = u.findPage()
	case setupflow.PageThisPC:
		content = u.thisPCPage()
	case setupflow.PagePlacement:
		content = u.placementPage()
	case setupflow.PageSecondPC:
		content = u.secondPCPage()
	case setupflow.PageReview:
		content = u.reviewPage()
	case setupflow.PageApply:
		content = u.applyPage()
	case setupflow.PageDone:
		content = u.donePage()
	}
	u.body.Objects = []fyne.CanvasObject{content}
	u.body.Refresh()
	u.updateButtons()
	if u.Win.Canvas().Focused() != nil {
		u.Win.Canvas().Unfocus()
	}
}

// settled tells the autopilot the page is ready to be looked at.
func (u *UI) settled() {
	u.hasSettled = true
	if u.OnPageShown != nil {
		u.OnPageShown(u.page)
	}
}

// bar is a progress bar with a line of text under it.
type bar struct {
	box  *fyne.Container
	bar  *widget.ProgressBar
	inf  *widget.ProgressBarInfinite
	text *widget.Label
}

func newBar() *bar {
	b := &bar{bar: widget.NewProgressBar(), inf: widget.NewProgressBarInfinite(), text: widget.NewLabel("")}
	b.text.Wrapping = fyne.TextWrapWord
	b.inf.Hide()
	b.inf.Stop()
	b.box = container.NewVBox(container.NewStack(b.bar, b.inf), b.text)
	return b
}

func (b *bar) set(p setupflow.Progress) {
	if p.Fraction < 0 {
		b.bar.Hide()
		b.inf.Show()
		b.inf.Start()
	} else {
		b.inf.Stop()
		b.inf.Hide()
		b.bar.Show()
		b.bar.SetValue(p.Fraction)
	}
	if p.Text != "" {
		b.text.SetText(p.Text)
	}
}

func (b *bar) done(text string) {
	b.inf.Stop()
	b.inf.Hide()
	b.bar.Show()
	b.bar.SetValue(1)
	b.text.SetText(text)
	if text == "" {
		b.text.Hide()
	} else {
		b.text.Show()
	}
}

// progress returns a callback that updates b from any goroutine.
func (u *UI) progressTo(b *bar) func(setupflow.Progress) {
	return func(p setupflow.Progress) { u.do(func() { b.set(p) }) }
}

// para is a wrapping label.
func para(s string) *widget.Label {
	l := widget.NewLabel(s)
	l.Wrapping = fyne.TextWrapWord
	return l
}

// indent shifts o right, under a radio button's text.
func indent(o fyne.CanvasObject) fyne.CanvasObject {
	pad := canvas.NewRectangle(color.Transparent)
	pad.SetMinSize(fyne.NewSize(theme.IconInlineSize()+theme.Padding()*2, 1))
	return container.NewBorder(nil, nil, pad, nil, o)
}

// section is a card with a bold heading no larger than the page's title.
func section(title string, content fyne.CanvasObject) *widget.Card {
	return widget.NewCard("", "", container.NewVBox(bold(title), content))
}

func bold(s string) *widget.Label {
	return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, setupflow.ErrCancelled)
}

// DemoEnabled reports STRATA_SETUP_DEMO=1.
func DemoEnabled() bool { return os.Getenv("STRATA_SETUP_DEMO") == "1" }

// FitSize is the window size to ask for: want where it fits, else the work
// area (the screen less the taskbar, in pixels; zero when unknown) over the
// scale fyne draws at, less room for the window's frame and title bar.
// Every page scrolls, so a smaller window loses nothing.
func FitSize(want, workArea fyne.Size, scale float32) fyne.Size {
	if scale <= 0 {
		scale = 1
	}
	if workArea.Width > 0 {
		if w := workArea.Width/scale - 24; w < want.Width {
			want.Width = w
		}
	}
	if workArea.Height > 0 {
		if h := workArea.Height/scale - 48; h < want.Height {
			want.Height = h
		}
	}
	return want
}

// strataDirs names the folders a Strata install holds, as this system
// writes paths (serve\ and engine\ on Windows).
var strataDirs = "serve" + string(filepath.Separator) + " and engine" + string(filepath.Separator)

// sshConfigWords is where the user's ssh config is, as a path of this
// system (C:\Users\sam\.ssh\config on Windows).
func sshConfigWords() string {
	if runtime.GOOS != "windows" {
		return "~/.ssh/config"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".ssh", "config")
	}
	return `%USERPROFILE%\.ssh\config`
}

// findHint is what the Strata page says when no install was found: in the
// words of this window (Browse), not the command line's.
func findHint(err error) string {
	var nf *stratainstall.NotFoundError
	if !errors.As(err, &nf) {
		return err.Error() + "\nBrowse to the Strata folder, or install Strata first (github.com/Niko1221/Strata)."
	}
	msg := "No Strata install was found"
	if nf.Why != "" {
		msg += " (" + nf.Why + ")"
	}
	if len(nf.Looked) > 0 {
		looked := nf.Looked
		if len(looked) > 4 {
			looked = append(append([]string{}, looked[:4]...), fmt.Sprintf("and %d more", len(nf.Looked)-4))
		}
		msg += " in " + strings.Join(looked, ", ")
	}
	return msg + ".\nChoose its folder with Browse... (the one holding " + strataDirs + "), or install Strata first (github.com/Niko1221/Strata)."
}

// guiWords is an error as this window says it: a missing install in the
// words of the Strata page (its Browse button), not the command line's.
func guiWords(err error) string {
	var nf *stratainstall.NotFoundError
	if errors.As(err, &nf) {
		return findHint(nf)
	}
	if msg := err.Error(); strings.Contains(msg, stratainstall.NotFoundText) {
		// The service's answer, as text: what it was doing, then ours.
		before, _, _ := strings.Cut(msg, stratainstall.NotFoundText)
		return before + "no Strata install was found.\nGo Back to the Strata page and choose its folder with Browse... (the one holding " + strataDirs + "), or install Strata first (github.com/Niko1221/Strata)."
	}
	return err.Error()
}
