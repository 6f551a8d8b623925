package pages

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// codeWidgets are the Second PC page's code section (tests, the autopilot).
type codeWidgets struct {
	list    *widget.RadioGroup
	address *widget.Entry
	code    *widget.Entry
	pair    *widget.Button
	again   *widget.Button
}

// notListed is the list's last choice: the PC's address typed by hand.
const notListed = "Not listed here: type its address"

// noneFound says why a PC that lends may not be found, and the way then.
// They are the other PC's settings, in Windows' words (a PC that lends is
// mostly a Windows laptop).
const noneFound = "No PC on this network lends its GPU yet. On that PC, open Strata Companion's setup and choose \"" + setupflow.LendRoleLabel + "\": it shows a pairing code.\n" +
	"If it shows one and is not listed here, this PC cannot hear it: the two PCs may be on different networks (a guest Wi-Fi, a second router), " +
	"the Wi-Fi may keep its devices apart (client isolation, common on guest networks), or that PC's firewall may treat the network as Public " +
	"(on that PC: Settings > Network & internet > the network's properties > Private). Then type its address here, with the code."

// codeSection is the Second PC page's first way in: the PCs on this
// network that lend their GPU (found by their announcement: name, GPU,
// VRAM, already paired), one picked or its address typed, the code it
// shows, Pair. paired runs once a pairing by code is made (the page's
// probe and prepare follow). It starts a search when none was made yet
// and then says so (the page settles once it is done).
func (u *UI) codeSection(paired func(*settings.Remote)) (box fyne.CanvasObject, searching bool) {
	if !u.Flow.Code.Available() {
		return nil, false
	}
	b := newBar()
	b.box.Hide()
	list := widget.NewRadioGroup(nil, nil)
	none := para(noneFound)
	none.Hide()
	address := widget.NewEntry()
	address.SetPlaceHolder("its name or IP address, e.g. 192.168.1.20 (ipconfig shows it on that PC)")
	addrForm := widget.NewForm(widget.NewFormItem("Its address", address))
	code := widget.NewEntry()
	code.SetPlaceHolder("the code that PC shows, like ABCD-EFGH")
	pairB := widget.NewButtonWithIcon("Pair", theme.ConfirmIcon(), nil)
	pairB.Importance = widget.HighImportance
	againB := widget.NewButtonWithIcon("Look again", theme.ViewRefreshIcon(), nil)
	u.codeW = codeWidgets{list: list, address: address, code: code, pair: pairB, again: againB}

	var found []setupflow.FoundPC
	picked := false // the user chose in the list
	showAddress := func() {
		if list.Selected == notListed {
			addrForm.Show()
		} else {
			addrForm.Hide()
		}
	}
	fill := func() {
		var searched bool
		found, searched = u.Flow.Code.Found()
		opts := make([]string, 0, len(found)+1)
		for _, p := range found {
			opts = append(opts, p.Describe())
		}
		opts = append(opts, notListed)
		sel := list.Selected
		if !picked || !contains(opts, sel) {
			sel = "" // the PC paired, or the one found, else the user picks
			for i, p := range found {
				if p.Paired || len(found) == 1 {
					sel = opts[i]
				}
			}
			if len(found) == 0 {
				sel = notListed
			}
		}
		list.OnChanged, list.Options, list.Selected = nil, opts, sel
		list.OnChanged = func(string) { picked = true; showAddress() }
		list.Refresh()
		showAddress()
		if searched && len(found) == 0 {
			none.Show()
		} else {
			none.Hide()
		}
	}
	busy := func(on bool) {
		if on {
			pairB.Disable()
			againB.Disable()
		} else {
			pairB.Enable()
			againB.Enable()
		}
	}
	search := func(first bool) {
		b.box.Show()
		b.set(setupflow.Progress{Fraction: -1, Text: "Looking for PCs on this network that lend their GPU..."})
		busy(true)
		u.goAsync(func() {
			_, err := u.Flow.Code.Find(u.ctx)
			u.do(func() {
				if isCancel(err) {
					return
				}
				b.box.Hide()
				busy(false)
				if err != nil {
					u.setHint(err.Error())
				}
				fill()
				if first {
					u.settled()
				}
			})
		})
	}
	againB.OnTapped = func() { u.setHint(""); search(false) }
	pairB.OnTapped = func() {
		var t pairing.CodeTarget
		switch i := indexOf(list.Options, list.Selected); {
		case list.Selected == notListed:
			tt, err := u.Flow.Code.Typed(address.Text)
			if err != nil {
				u.setHint(settings.UpperFirst(err.Error()))
				return
			}
			t = tt
		case i >= 0 && i < len(found):
			t = found[i].Target()
		default:
			u.setHint("Pick the PC in the list (or \"" + notListed + "\"), then type the code it shows.")
			return
		}
		u.setHint("")
		b.box.Show()
		b.set(setupflow.Progress{Fraction: 0, Text: "Pairing with " + t.String() + "..."})
		busy(true)
		typed := code.Text
		u.goAsync(func() {
			r, err := u.Flow.Code.Pair(u.ctx, t, typed, u.progressTo(b))
			u.do(func() {
				if isCancel(err) {
					return
				}
				busy(false)
				if err != nil {
					b.done("Not paired")
					u.setHint(settings.UpperFirst(err.Error()))
					u.settled()
					return
				}
				b.done("Paired with " + t.String() + " by its code: the companion has its own key there")
				code.SetText("")
				fill()
				paired(r)
			})
		})
	}
	code.OnSubmitted = func(string) { pairB.OnTapped() }
	address.OnSubmitted = func(string) { u.Win.Canvas().Focus(code) }

	fill()
	_, searched := u.Flow.Code.Found()
	if !searched {
		search(true)
	}
	intro := para("On that PC, choose \"" + setupflow.LendRoleLabel + "\" in Strata Companion's setup: it shows a pairing code. Pick it here, type the code and press Pair.")
	box = section("PCs on this network that lend their GPU", container.NewVBox(intro,
		list, none, addrForm,
		widget.NewForm(widget.NewFormItem("Pairing code", code)), container.NewHBox(pairB, againB), b.box))
	return box, !searched
}

// probeThenPrepare follows a pairing by code: the probe (with the
// companion's own key: the host key is pinned, so nothing is asked), then
// the prepare, on the page's own bars, as Pair and prepare does.
func (u *UI) probeThenPrepare(probeBar, prepBar *bar, showReport func(*setupflow.RemoteReport), state func()) {
	probeBar.box.Show()
	probeBar.set(setupflow.Progress{Fraction: 0, Text: "Connecting with the companion's own key..."})
	u.goAsync(func() {
		u.do(state)
		r, err := u.Flow.SecondPC.Probe(u.ctx, u.progressTo(probeBar))
		if isCancel(err) {
			return
		}
		u.do(func() {
			if err != nil {
				probeBar.done("Probe failed")
				u.setHint(err.Error())
			} else {
				probeBar.done("Reached " + r.Address)
				showReport(r)
			}
			prepBar.box.Show()
			prepBar.set(setupflow.Progress{Fraction: 0, Text: "Preparing..."})
			state()
		})
		perr := u.Flow.SecondPC.Prepare(u.ctx, u.progressTo(prepBar))
		u.do(func() {
			if isCancel(perr) {
				return
			}
			if perr != nil {
				prepBar.done("Preparing failed")
				u.setHint(perr.Error())
			} else {
				prepBar.done("Prepared: the encoder started there and answered READY")
			}
			state()
			u.settled()
		})
	})
}

func indexOf(list []string, s string) int {
	for i, o := range list {
		if o == s {
			return i
		}
	}
	return -1
}

func contains(list []string, s string) bool { return indexOf(list, s) >= 0 }
