package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

// The question before a switch follows the service's dry run: a switch that
// restarts Strata says so and that text stops for a while; one that does
// not asks nothing and says it needs no restart.
func TestDecideVisionChange(t *testing.T) {
	now := time.Now()
	ready := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady}, Vision: controlapi.VisionState{Placement: "remote"}}
	stopped := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseStopped}}
	for _, tc := range []struct {
		name    string
		st      *controlapi.State
		target  string
		dry     *controlapi.VisionResponse
		confirm bool
		want    []string
	}{
		{"to the GPU restarts", ready, "gpu", &controlapi.VisionResponse{RestartNeeded: true}, true, []string{"restarts Strata", "text stops for a while", "Continue?"}},
		{"no dry run: assume a restart", ready, "gpu", nil, true, []string{"restarts Strata"}},
		{"remote to cpu: no restart", ready, "cpu", &controlapi.VisionResponse{}, false, []string{"the CPU", "needs no restart", "keeps answering"}},
		{"off: no restart", ready, "off", &controlapi.VisionResponse{}, false, []string{"needs no restart"}},
		{"a stopped server has nothing to interrupt", stopped, "gpu", &controlapi.VisionResponse{RestartNeeded: true}, false, nil},
	} {
		d := DecideVisionChange(tc.st, tc.target, "pc2", tc.dry, now)
		if d.Confirm != tc.confirm {
			t.Errorf("%s: confirm %v, want %v (%+v)", tc.name, d.Confirm, tc.confirm, d)
		}
		text := d.Question
		if !d.Confirm {
			text = d.Explain
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q does not say %q", tc.name, text, w)
			}
		}
	}
}
