package traymodel

import (
	"fmt"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

// Decision is what a click on a vision choice or on Restart Strata leads to.
type Decision struct {
	// Nothing to do (the choice is already in effect).
	Noop bool
	// OpenSetupPage: instead of switching, open setup on this page (the
	// second PC is not paired yet).
	OpenSetupPage string
	// Confirm: ask Question first, because the restart interrupts work.
	Confirm  bool
	Question string
	// Explain is the question's statement without "Continue?", for a
	// notice when no dialog can ask.
	Explain string
}

// RecentPicture is how recent a picture must be to count as "work in progress"
// worth naming in the question.
const RecentPicture = 2 * time.Minute

// DecideVision decides what choosing placement target does, given the state.
func DecideVision(st *controlapi.State, target, remoteName string, now time.Time) Decision {
	if st != nil && st.Vision.Placement == target {
		return Decision{Noop: true}
	}
	if settings.Placement(target).SecondPC() && remoteName == "" {
		return Decision{OpenSetupPage: "remote"}
	}
	what := "Switching vision to " + PlacementName(target, remoteName)
	return confirmRestart(st, what+" restarts Strata: it stops", what, now)
}

// DecideModel decides what choosing another config (model) does: it
// restarts Strata, so a running one is asked about first.
func DecideModel(st *controlapi.State, tag string, running bool, now time.Time) Decision {
	if running {
		return Decision{Noop: true}
	}
	what := "Switching the model to " + tag
	return confirmRestart(st, what+" restarts Strata: it stops", what, now)
}

// DecideUpdate decides whether updating Strata needs confirming (it stops
// Strata for a few minutes); offer says what the update is.
func DecideUpdate(st *controlapi.State, offer string, now time.Time) Decision {
	d := confirmRestart(st, offer+" Updating stops Strata: it stops", "Updating Strata", now)
	if !d.Confirm {
		d.Explain = offer
	}
	return d
}

// DecideRepair decides what "put back what Strata's setup changed" does:
// changes are the service's dry run in words (port, host, key, pictures);
// busy: Strata is answering a request now.
func DecideRepair(st *controlapi.State, changes []string, busy bool, now time.Time) Decision {
	what := "Putting back what Strata's setup changed"
	if len(changes) > 0 {
		what += " (" + strings.Join(changes, "; ") + ")"
	}
	return WithBusy(confirmRestart(st, what+" restarts Strata: it stops", "Putting back what Strata's setup changed", now), busy)
}

// WithBusy names a request Strata is answering now in a decision's
// question: the restart cuts it.
func WithBusy(d Decision, busy bool) Decision {
	if !busy || !d.Confirm {
		return d
	}
	const b = "Strata is answering a request now: it will be cut off. "
	d.Question, d.Explain = b+d.Question, b+d.Explain
	return d
}

// DecideRestart decides whether Restart Strata needs confirming.
func DecideRestart(st *controlapi.State, now time.Time) Decision {
	return confirmRestart(st, "Strata stops", "Restarting Strata", now)
}

// UnloadTitle is the tray's item that has Strata unload its model.
const UnloadTitle = "Free the GPU (unload the model)"

// ModelLoaded says whether the running Strata holds its model now (ready,
// not unloaded, its own): only then is there memory to give back.
func ModelLoaded(st *controlapi.State) bool {
	return st != nil && st.Server.Phase == controlapi.PhaseReady && st.Server.Unloaded.IsZero() && st.Server.Foreign == nil
}

// DecideUnload asks before Strata unloads its model: the GPU's memory is
// free at once (a game can have it), and the next request waits while the
// model loads again; requests in progress are cut off.
func DecideUnload(st *controlapi.State, now time.Time) Decision {
	if !ModelLoaded(st) {
		return Decision{Noop: true}
	}
	q := "Strata unloads its model and gives the GPU's memory back; the server keeps answering, and the next request waits " +
		RestartCost(st) + " while the model loads again. Requests in progress are cut off."
	if lp := st.Vision.LastPicture; !lp.IsZero() && now.Sub(lp) < RecentPicture && now.Sub(lp) >= 0 {
		q += fmt.Sprintf(" A picture was read %s ago.", Duration(now.Sub(lp)))
	}
	return Decision{Confirm: true, Question: q + " Continue?", Explain: q}
}

// confirmRestart asks when a restart would interrupt a running (or loading)
// server: requests in progress are cut off and Strata is away for a minute or
// two. A stopped or failed server has nothing to interrupt.
// lead starts the sentence about the restart ("... stops answering"); what
// names the action for a start in progress.
func confirmRestart(st *controlapi.State, lead, what string, now time.Time) Decision {
	if st == nil {
		return Decision{}
	}
	switch st.Server.Phase {
	case controlapi.PhaseReady:
		q := lead + " answering " + RestartCost(st) + " while the model loads again, and requests in progress are cut off."
		if lp := st.Vision.LastPicture; !lp.IsZero() && now.Sub(lp) < RecentPicture && now.Sub(lp) >= 0 {
			q += fmt.Sprintf(" A picture was read %s ago.", Duration(now.Sub(lp)))
		}
		return Decision{Confirm: true, Question: q + " Continue?", Explain: q}
	case controlapi.PhaseStarting, controlapi.PhaseRestarting:
		q := what + " interrupts the start in progress and begins it again."
		return Decision{Confirm: true, Question: q + " Continue?", Explain: q}
	}
	return Decision{}
}

// Resolve says whether a pending action is over, given the newest state:
// done when the server is ready again (with the new placement) after the
// action started; failed (with the reason) when the server failed since.
func (p *Pending) Resolve(st *controlapi.State, now time.Time) (done bool, failure string) {
	if p == nil {
		return true, ""
	}
	if p.Err != "" {
		// The error stays on screen for a while, then the line goes away.
		return now.Sub(p.Started) > 30*time.Second, ""
	}
	if st == nil {
		return false, ""
	}
	// The service and the tray share the clock of this PC; a phase that
	// changed before the click belongs to the old state.
	changedSince := !st.Server.Since.Before(p.Started.Add(-2 * time.Second))
	if p.Action == "unload" {
		// Done when the state says the model went, not when a phase changes
		// (the server stays ready).
		if u := st.Server.Unloaded; !u.IsZero() && !u.Before(p.Started.Add(-2*time.Second)) {
			return true, ""
		}
		if now.Sub(p.Started) > 2*time.Minute {
			return true, ""
		}
		return false, ""
	}
	switch st.Server.Phase {
	case controlapi.PhaseReady:
		if (changedSince || p.NoRestart) && (p.Action != "vision" || st.Vision.Placement == p.Placement) {
			return true, ""
		}
	case controlapi.PhaseFailed:
		if changedSince {
			msg := st.Server.LastError
			if msg == "" {
				msg = "the server failed to start"
			}
			return true, msg
		}
	case controlapi.PhaseStopped:
		// Applied without a restart (the server was stopped): nothing to wait for.
		if p.Action == "vision" && st.Vision.Placement == p.Placement {
			return true, ""
		}
	}
	// Give up showing progress after a long time: the status lines say the rest.
	if now.Sub(p.Started) > 15*time.Minute {
		return true, ""
	}
	return false, ""
}

// RestartCost is how long text stops for a restart, in words: about as long
// as this install's last start took, else Strata's own 1-3 minutes.
func RestartCost(st *controlapi.State) string {
	if st != nil && st.Server.LastStartS >= 1 {
		d := time.Duration(st.Server.LastStartS * float64(time.Second))
		return "for about " + Duration(d.Round(time.Second)) + " (its last start took that long)"
	}
	return "for 1-3 minutes"
}
