// Command baretray is the idle baseline for strata-tray: a bare
// getlantern/systray program with an icon and three menu items, nothing else.
package main

import (
	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/assets"
)

func main() {
	systray.Run(func() {
		systray.SetIcon(assets.PNG(assets.TrayReady))
		systray.SetTooltip("bare")
		systray.AddMenuItem("one", "")
		systray.AddMenuItem("two", "")
		systray.AddMenuItem("three", "")
	}, func() {})
}
