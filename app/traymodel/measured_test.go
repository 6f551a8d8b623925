package traymodel

import (
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

// TestLastMeasuredRow: the last trial picture for the place pictures are
// read now, and nothing for a place never measured or a service away.
func TestLastMeasuredRow(t *testing.T) {
	m := &settings.Measured{CPU: &settings.Measurement{PictureS: 14.2, StartS: 3.1, When: "2026-12-05T10:00:00Z", StrataVersion: "0.9.3"}}
	cpu := with(func(s *controlapi.State) { s.Vision.Placement = "cpu" })
	got := Build(Input{Now: t0, State: cpu, Reach: Connected, Measured: m}).Items[ItemLastMeasured]
	if !got.Visible || got.Enabled || !strings.HasPrefix(got.Title, "Last measured: 14.2 s per picture, start 3.1 s (measured ") || !strings.HasSuffix(got.Title, "Strata 0.9.3)") {
		t.Errorf("cpu: %+v", got)
	}
	gpu := with(func(s *controlapi.State) { s.Vision.Placement = "gpu" })
	for _, in := range []Input{
		{Now: t0, State: gpu, Reach: Connected, Measured: m},
		{Now: t0, State: cpu, Reach: Connected},
		{Now: t0, Reach: Unreachable, Measured: m},
	} {
		if it := Build(in).Items[ItemLastMeasured]; it.Visible {
			t.Errorf("shown for %+v: %q", in.State, it.Title)
		}
	}
}
