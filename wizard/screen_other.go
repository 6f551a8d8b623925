//go:build !windows

package main

import (
	"os"
	"strconv"

	"fyne.io/fyne/v2"
)

// workArea is the screen's usable size in pixels; zero when unknown (fyne
// and the window manager keep a window on an X11 or macOS screen).
func workArea() fyne.Size { return fyne.Size{} }

// scale is fyne's own scale setting (FYNE_SCALE), 1 when unset.
func scale() float32 {
	if v, err := strconv.ParseFloat(os.Getenv("FYNE_SCALE"), 32); err == nil && v > 0 {
		return float32(v)
	}
	return 1
}
