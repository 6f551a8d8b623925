package measure

import (
	"fmt"

	"github.com/strata-companion/companion/internal/settings"
)

// Outcome is one candidate's trial: its result, or why it could not be
// measured (Err), or neither when it was not tried.
type Outcome struct {
	Placement settings.Placement
	Result    *Result
	Err       error
}

// Choose recommends from what was measured, starting from the probe's
// recommendation (base), which weighs VRAM as well as time:
//   - this PC's CPU and the second PC both leave the GPU's VRAM to the
//     model, so between them the one measured faster wins;
//   - a recommended place whose trial failed gives way to the fastest place
//     that was measured (its failure is said);
//   - otherwise base stands, with its measured figure.
//
// reason is one sentence for people; changed says Choose moved away from base.
func Choose(base settings.Placement, outs []Outcome) (best settings.Placement, reason string, changed bool) {
	got := map[settings.Placement]*Result{}
	failed := map[settings.Placement]error{}
	for _, o := range outs {
		switch {
		case o.Result != nil:
			got[o.Placement] = o.Result
		case o.Err != nil:
			failed[o.Placement] = o.Err
		}
	}
	name := func(p settings.Placement) string { return p.Name("") }
	fig := func(r *Result) string { return settings.Secs(r.PictureSeconds) + " per picture" }
	if r, ok := got[base]; ok {
		other := map[settings.Placement]settings.Placement{settings.PlacementCPU: settings.PlacementRemote, settings.PlacementRemote: settings.PlacementCPU}[base]
		if o, ok := got[other]; ok && o.PictureSeconds < r.PictureSeconds {
			return other, fmt.Sprintf("measured here, %s reads a picture in %s against %s on %s, and both leave the GPU's memory to the model", name(other), settings.Secs(o.PictureSeconds), settings.Secs(r.PictureSeconds), name(base)), true
		}
		return base, fmt.Sprintf("measured here: %s on %s", fig(r), name(base)), false
	}
	var fastest *Result
	for _, p := range []settings.Placement{settings.PlacementGPU, settings.PlacementRemote, settings.PlacementCPU} {
		if r, ok := got[p]; ok && (fastest == nil || r.PictureSeconds < fastest.PictureSeconds) {
			fastest = r
		}
	}
	if err, ok := failed[base]; ok && fastest != nil {
		return fastest.Placement, fmt.Sprintf("the trial on %s failed (%v); of what was measured here, %s is fastest: %s", name(base), err, name(fastest.Placement), fig(fastest)), true
	}
	return base, "", false
}
