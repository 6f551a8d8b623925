package pages

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// Theme is the wizard's theme: fyne's own, except the colours of text that
// fyne draws too faint to read. Detail text first. A label of
// LowImportance (the hints, "Not possible here: ...", where and when a
// trial was measured, the steps still ahead) is drawn in
// theme.ColorNameDisabled, which fyne makes #e3e3e3 on white (1.3:1) and
// #39393a on #171718 (1.6:1): too faint to read. Here it is a grey with
// WCAG AA contrast (at least 4.5:1) on the background in both variants;
// disabled controls use the same colour, so they stay readable too.
//
// Then, on the light theme only, the words of a warning, a success and an
// error (labels of WarningImportance, SuccessImportance, DangerImportance:
// "Not measured: ...", "Measured here", a failed step), which fyne draws in
// #ff9800 (2.2:1 on white), #43f436 (1.5:1) and #f44336 (3.7:1): darker
// shades of the same hues, at least 4.5:1. On the dark theme fyne's own
// reach it already (8.3, 12.1 and 4.9:1) and stay.
func Theme() fyne.Theme { return detailTheme{theme.DefaultTheme()} }

var (
	lightDetail = color.NRGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff} // 4.95:1 on #ffffff
	darkDetail  = color.NRGBA{R: 0x8a, G: 0x8a, B: 0x8a, A: 0xff} // 5.2:1 on #171718

	lightWords = map[fyne.ThemeColorName]color.Color{
		theme.ColorNameWarning: color.NRGBA{R: 0xb4, G: 0x53, B: 0x09, A: 0xff}, // 5.0:1 on #ffffff
		theme.ColorNameSuccess: color.NRGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}, // 5.1:1
		theme.ColorNameError:   color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}, // 5.6:1
	}
)

type detailTheme struct{ fyne.Theme }

func (t detailTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNameDisabled {
		if v == theme.VariantDark {
			return darkDetail
		}
		return lightDetail
	}
	if c, ok := lightWords[n]; ok && v != theme.VariantDark {
		return c
	}
	return t.Theme.Color(n, v)
}
