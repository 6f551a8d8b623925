package measure

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
)

func TestChooseFromMeasuredFigures(t *testing.T) {
	cpu := func(s float64) Outcome {
		return Outcome{Placement: settings.PlacementCPU, Result: &Result{Placement: settings.PlacementCPU, PictureSeconds: s}}
	}
	rem := func(s float64) Outcome {
		return Outcome{Placement: settings.PlacementRemote, Result: &Result{Placement: settings.PlacementRemote, PictureSeconds: s}}
	}
	gpu := func(s float64) Outcome {
		return Outcome{Placement: settings.PlacementGPU, Result: &Result{Placement: settings.PlacementGPU, PictureSeconds: s}}
	}
	remFailed := Outcome{Placement: settings.PlacementRemote, Err: errors.New("the second PC did not answer")}
	cases := []struct {
		name    string
		base    settings.Placement
		outs    []Outcome
		want    settings.Placement
		changed bool
		words   string
	}{
		{"the estimate holds", settings.PlacementRemote, []Outcome{cpu(14.2), rem(2.4), gpu(1.6)}, settings.PlacementRemote, false, "measured here: 2.4 s per picture on the second PC"},
		{"a fast CPU beats a slow link", settings.PlacementRemote, []Outcome{cpu(3.1), rem(9.5)}, settings.PlacementCPU, true, "this PC's CPU reads a picture in 3.1 s against 9.5 s"},
		{"a second PC beats a slow CPU", settings.PlacementCPU, []Outcome{cpu(40), rem(2.9)}, settings.PlacementRemote, true, "both leave the GPU's memory"},
		{"the GPU stands on a big card", settings.PlacementGPU, []Outcome{cpu(3.0), gpu(1.2)}, settings.PlacementGPU, false, "1.2 s"},
		{"a failed second PC gives way", settings.PlacementRemote, []Outcome{cpu(14.2), remFailed}, settings.PlacementCPU, true, "the trial on the second PC failed (the second PC did not answer)"},
		{"nothing measured", settings.PlacementCPU, nil, settings.PlacementCPU, false, ""},
	}
	for _, c := range cases {
		got, why, changed := Choose(c.base, c.outs)
		if got != c.want || changed != c.changed || !strings.Contains(why, c.words) {
			t.Errorf("%s: got %s %v %q", c.name, got, changed, why)
		}
	}
}
