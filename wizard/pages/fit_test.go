package pages_test

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"

	"github.com/strata-companion/companion/wizard/pages"
)

// At 150 % on a 1280x800 screen (a 760 px high work area) the window asks
// for no more than fits; where it fits, for what it wants.
func TestFitSize(t *testing.T) {
	want := fyne.NewSize(880, 700)
	for _, c := range []struct {
		area  fyne.Size
		scale float32
	}{{fyne.NewSize(1280, 760), 1.5}, {fyne.NewSize(1280, 760), 1}, {fyne.NewSize(1920, 1040), 1.25}, {fyne.NewSize(1366, 728), 2}} {
		got := pages.FitSize(want, c.area, c.scale)
		if got.Width*c.scale > c.area.Width || got.Height*c.scale > c.area.Height {
			t.Errorf("%v at %v: %v is %vx%v pixels, more than the work area", c.area, c.scale, got, got.Width*c.scale, got.Height*c.scale)
		}
		if big := (want.Width+24)*c.scale <= c.area.Width && (want.Height+48)*c.scale <= c.area.Height; big && got != want {
			t.Errorf("%v at %v: %v, want %v (it fits)", c.area, c.scale, got, want)
		}
	}
	if got := pages.FitSize(want, fyne.Size{}, 1.5); got != want {
		t.Errorf("unknown work area: %v, want %v", got, want)
	}
}

// A diff's long lines are wrapped with their marker kept, so nothing is cut
// at the right and nothing scrolls sideways; the text is all there.
func TestWrapDiff(t *testing.T) {
	long := `+  "args": ["-m", "models\\Qwen3.6-35B-A3B-IQ2_XS.gguf", "--ctx-size", "32768", "--threads", "8", "--cache-type-k", "q8_0", "--flash-attn", "--vram-reserve-mib", "1000"],`
	diff := "--- a/strata.json\n+++ b/strata.json\n@@ -1,3 +1,3 @@\n" + strings.Replace(long, "+", "-", 1) + "\n" + long + "\n   \"log\": \"x\","
	got := pages.WrapDiff(diff, 60)
	var joined strings.Builder
	for _, l := range strings.Split(got, "\n") {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("a line of %d characters: %q", n, l)
		}
		if l == "" || !strings.ContainsRune("+- @", rune(l[0])) {
			t.Errorf("a line lost its marker: %q", l)
		}
		joined.WriteString(strings.TrimSpace(strings.TrimLeft(l, "+- ")))
	}
	flat := strings.NewReplacer(" ", "", "\n", "", "+", "", "-", "").Replace(diff)
	if strings.NewReplacer(" ", "", "+", "", "-", "").Replace(joined.String()) != flat {
		t.Errorf("wrapping changed the text:\n%s", got)
	}
	if !strings.Contains(got, "\n-    ") || !strings.Contains(got, "\n+    ") {
		t.Errorf("continuation lines keep the line's marker:\n%s", got)
	}
}
