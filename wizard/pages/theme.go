package pages

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// Theme is the wizard's theme: fyne's own, except the faint grey of detail
// text. A label of LowImportance (the hints, "Not possible here: ...", where
// and when a trial was measured, the steps still ahead) is drawn in
// theme.ColorNameDisabled, which fyne makes #e3e3e3 on white (1.3:1) and
// #39393a on #171718 (1.6:1): too faint to read. Here it is a grey with
// WCAG AA contrast (at least 4.5:1) on the background in both variants;
// disabled controls use the same colour, so they stay readable too.
func Theme() fyne.Theme { return detailTheme{theme.DefaultTheme()} }

var (
	lightDetail = color.NRGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff} // 4.95:1 on #ffffff
	darkDetail  = color.NRGBA{R: 0x8a, G: 0x8a, B: 0x8a, A: 0xff} // 5.2:1 on #171718
)

type detailTheme struct{ fyne.Theme }

func (t detailTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNameDisabled {
		if v == theme.VariantDark {
			return darkDetail
		}
		return lightDetail
	}
	return t.Theme.Color(n, v)
}
