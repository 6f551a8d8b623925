package main

import (
	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/assets"
)

// macOS menu bars take PNG and have tooltips; not a release target yet.
func setIcon(name string) { systray.SetIcon(assets.PNG(name)) }

func setTooltip(s string) { systray.SetTooltip(s) }
