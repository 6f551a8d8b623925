package setupflow

import (
	"strings"
	"testing"
)

// An option's figures have one wording, the window's and the terminal's:
// the time per picture, then what it costs or frees of the VRAM; nothing
// for a figure that is unknown.
func TestOptionFiguresWording(t *testing.T) {
	for _, c := range []struct {
		o    Option
		want string
	}{
		{Option{PictureSeconds: 1.6, VRAMMiB: 1434}, "about 1.6 s per picture|uses 1.4 GB of this GPU's VRAM"},
		{Option{PictureSeconds: 15, VRAMMiB: -1434}, "about 15 s per picture|frees 1.4 GB of VRAM for Strata"},
		{Option{VRAMMiB: -1383}, "frees 1.4 GB of VRAM for Strata"},
		{Option{}, ""},
	} {
		if got := strings.Join(c.o.Figures(), "|"); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
