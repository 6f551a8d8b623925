package traymodel

import (
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

// DecideVisionChange decides what to say before switching vision to target,
// from the service's dry run of that switch (dry; nil when it could not be
// asked). A switch that edits Strata's config (to or from this PC's GPU)
// restarts Strata: with a running server the question says so, and that
// text stops for a while. A switch among the second PC, the CPU and off
// needs no restart: no question, and Explain says so (shown once it is done).
func DecideVisionChange(st *controlapi.State, target, remoteName string, dry *controlapi.VisionResponse, now time.Time) Decision {
	what := "Switching vision to " + PlacementName(target, remoteName)
	if dry == nil || dry.RestartNeeded {
		return confirmRestart(st, what+" restarts Strata: text stops for a while, as Strata stops", what, now)
	}
	return Decision{Explain: what + " needs no restart: Strata keeps answering, and pictures are read there from the next one on."}
}
