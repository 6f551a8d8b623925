// Command fyne is bench/tray's tray on fyne.io/systray (the maintained
// fork, pure Go over DBus on Linux): an icon, a hover text, three
// items, a check box and a submenu item. It prints "ready" once the tray is
// up and "clicked <title>" for each click, for the bench to read.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"fyne.io/systray"

	"github.com/strata-companion/companion/assets"
)

func main() {
	systray.Run(func() {
		systray.SetIcon(assets.PNG(assets.TrayReady))
		systray.SetTooltip("bench hover text")
		systray.SetTitle("bench hover text") // the SNI Title, which hosts show on hover
		items := map[string]*systray.MenuItem{}
		for _, t := range []string{"one", "two", "three"} {
			items[t] = systray.AddMenuItem(t, "")
		}
		items["check"] = systray.AddMenuItemCheckbox("check", "", false)
		sub := systray.AddMenuItem("sub", "")
		items["inner"] = sub.AddSubMenuItem("inner", "")
		for t, it := range items {
			go func(t string, ch chan struct{}) {
				for range ch {
					fmt.Println("clicked", t)
				}
			}(t, it.ClickedCh)
		}
		go func() {
			s := make(chan os.Signal, 1)
			signal.Notify(s, syscall.SIGTERM, os.Interrupt)
			<-s
			systray.Quit()
		}()
		fmt.Println("ready")
	}, func() {})
}
