package main

import (
	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/assets"
)

// The Windows tray refuses PNG: it needs ICO bytes.
func setIcon(name string) { systray.SetIcon(assets.ICO(name)) }

func setTooltip(s string) { systray.SetTooltip(s) }
