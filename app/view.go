package main

import (
	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/app/traymodel"
)

// view copies traymodel menus onto systray. systray v1.2.2 cannot remove
// items, so every item is made once, in traymodel's order, and later only
// retitled, enabled or disabled, checked, shown or hidden. Show runs on the
// controller's goroutine only; systray forwards each call to the GUI thread.
type view struct {
	items [traymodel.NumItems]*systray.MenuItem
	cur   traymodel.Menu
	dirty [traymodel.NumItems]bool // check mark toggled by the toolkit on a click
}

func newView() *view {
	v := &view{}
	first := traymodel.Build(traymodel.Input{Reach: traymodel.Unreachable})
	for id := traymodel.ItemID(0); id < traymodel.NumItems; id++ {
		it := first.Items[id]
		switch {
		case id.Parent() >= 0:
			// A submenu's slot (the Model submenu's configs).
			v.items[id] = v.items[id.Parent()].AddSubMenuItemCheckbox(it.Title, "", it.Checked)
		case id.Checkable():
			v.items[id] = systray.AddMenuItemCheckbox(it.Title, "", it.Checked)
		default:
			v.items[id] = systray.AddMenuItem(it.Title, "")
		}
		if !it.Enabled {
			v.items[id].Disable()
		}
		if !it.Visible {
			v.items[id].Hide()
		}
		if traymodel.SeparatorAfter[id] {
			systray.AddSeparator()
		}
	}
	v.cur = first
	setIcon(first.Icon)
	setTooltip(first.Tooltip)
	return v
}

// Invalidate makes the next Show set id's check mark again (a click toggled
// it in the toolkit; the model decides what it really is).
func (v *view) Invalidate(id traymodel.ItemID) { v.dirty[id] = true }

func (v *view) Show(m traymodel.Menu) {
	if m.Icon != v.cur.Icon {
		setIcon(m.Icon)
	}
	if m.Tooltip != v.cur.Tooltip {
		setTooltip(m.Tooltip)
	}
	for id := traymodel.ItemID(0); id < traymodel.NumItems; id++ {
		it, old, mi := m.Items[id], v.cur.Items[id], v.items[id]
		changed := false
		if it.Title != old.Title {
			mi.SetTitle(it.Title)
			changed = true
		}
		if it.Enabled != old.Enabled {
			if it.Enabled {
				mi.Enable()
			} else {
				mi.Disable()
			}
			changed = true
		}
		if id.Checkable() && (it.Checked != old.Checked || v.dirty[id]) {
			if it.Checked {
				mi.Check()
			} else {
				mi.Uncheck()
			}
			v.dirty[id] = false
			changed = true
		}
		// systray's Linux code shows an item again on every update, so a
		// hidden one is hidden again after any change.
		if it.Visible != old.Visible || (changed && !it.Visible) {
			if it.Visible {
				mi.Show()
			} else {
				mi.Hide()
			}
		}
	}
	v.cur = m
}
