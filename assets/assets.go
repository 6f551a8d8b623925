// Package assets embeds the app icon and the tray icons. The images are made
// by gen/ (go run ./assets/gen); see docs for what each state looks like.
package assets

import "embed"

//go:embed *.png *.ico
var files embed.FS

// Names of the tray states with an icon each.
const (
	TrayReady    = "tray-ready"    // server ready, vision as configured
	TrayBusy     = "tray-busy"     // starting, loading, restarting
	TrayDegraded = "tray-degraded" // text works, pictures do not (e.g. second PC down)
	TrayError    = "tray-error"    // the server failed
	TrayOffline  = "tray-offline"  // the service is not installed or not reachable
)

// PNG returns name.png (Linux and macOS trays, fyne).
func PNG(name string) []byte { return mustRead(name + ".png") }

// ICO returns name.ico (the Windows tray needs ICO bytes; PNG is refused).
func ICO(name string) []byte { return mustRead(name + ".ico") }

func mustRead(f string) []byte {
	b, err := files.ReadFile(f)
	if err != nil {
		panic("assets: missing " + f)
	}
	return b
}
