package pages

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// The wizard's own small modal dialogs, built on widget.ModalPopUp, with the
// keyboard behaviour the wizard wants (Escape answers "no"); fyne's dialog
// package is used only for its folder chooser on the Find Strata page.

// modal is the open dialog; Escape answers it with "no".
type modal struct {
	pop    *widget.PopUp
	answer func(bool)
}

// confirm asks a yes/no question; cb gets the answer.
func (u *UI) confirm(title string, body fyne.CanvasObject, yes, no string, cb func(bool)) {
	if u.modal != nil {
		return
	}
	m := &modal{}
	answer := func(ok bool) {
		if u.modal != m {
			return
		}
		u.modal = nil
		m.pop.Hide()
		if cb != nil {
			cb(ok)
		}
	}
	m.answer = answer
	yesB := widget.NewButton(yes, func() { answer(true) })
	yesB.Importance = widget.HighImportance
	buttons := container.NewHBox(layout.NewSpacer())
	if no != "" {
		buttons.Add(widget.NewButton(no, func() { answer(false) }))
	}
	buttons.Add(yesB)
	// A readable width: without it a short question wraps into a column.
	width := canvas.NewRectangle(color.Transparent)
	width.SetMinSize(fyne.NewSize(440, 1))
	content := container.NewStack(width, container.NewVBox(bold(title), body, buttons))
	m.pop = widget.NewModalPopUp(container.NewPadded(content), u.Win.Canvas())
	u.modal = m
	m.pop.Show()
	// Focus the safe answer: Enter never trusts a host key by accident.
	if no != "" {
		u.Win.Canvas().Focus(buttons.Objects[1].(*widget.Button))
	} else {
		u.Win.Canvas().Focus(yesB)
	}
}

// inform shows a message with one OK button.
func (u *UI) inform(title, msg string, then func()) {
	u.confirm(title, para(msg), "OK", "", func(bool) {
		if then != nil {
			then()
		}
	})
}

// ModalOpen reports whether a dialog is shown (tests).
func (u *UI) ModalOpen() bool { return u.modal != nil }

// AnswerModal answers the open dialog (tests and the autopilot).
func (u *UI) AnswerModal(ok bool) {
	if u.modal != nil {
		u.modal.answer(ok)
	}
}
