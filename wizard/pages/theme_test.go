package pages

import (
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// luminance is a colour's relative luminance (WCAG 2.x).
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

// contrast is the WCAG contrast ratio of two colours (1 to 21).
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// Issue 40: the faint grey detail text (LowImportance labels, drawn in
// ColorNameDisabled), and the words of warnings, successes and errors,
// reach WCAG AA, 4.5:1, on the background of the
// wizard's pages and cards, in the light and the dark theme; the rest of
// fyne's theme is left as it is.
func TestDetailTextReachesWCAGAA(t *testing.T) {
	if got := contrast(color.White, color.Black); math.Abs(got-21) > 0.01 {
		t.Fatalf("contrast(white, black) = %.2f, want 21", got)
	}
	name := map[fyne.ThemeVariant]string{theme.VariantLight: "light", theme.VariantDark: "dark"}
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		bg := Theme().Color(theme.ColorNameBackground, v)
		// The colours of the labels' importances the wizard uses: Low
		// (detail), Warning, Success, Danger.
		for _, n := range []fyne.ThemeColorName{theme.ColorNameDisabled, theme.ColorNameWarning, theme.ColorNameSuccess, theme.ColorNameError} {
			if r := contrast(Theme().Color(n, v), bg); r < 4.5 {
				t.Errorf("%s: %s text at %.2f:1 on the background, below 4.5:1", name[v], n, r)
			} else {
				t.Logf("%s: %s text %.2f:1 (fyne's own: %.2f:1)", name[v], n, r, contrast(theme.DefaultTheme().Color(n, v), bg))
			}
		}
		for _, n := range []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameBackground, theme.ColorNamePrimary} {
			if Theme().Color(n, v) != theme.DefaultTheme().Color(n, v) {
				t.Errorf("%s: the theme changes %s too", name[v], n)
			}
		}
	}
}
