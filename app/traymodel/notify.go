package traymodel

import (
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// Notice is one desktop notification.
type Notice struct {
	Topic string // what it is about; the rate limit is per topic
	Title string
	Body  string
	// Up is true for "it is back" notices: they are only sent when the
	// matching "down" notice was sent, so a flapping link cannot alternate
	// the two fifty times.
	Up bool
	// Urgent notices (failures) ask the desktop to keep them visible.
	Urgent bool
}

// Topics.
const (
	TopicServerReady   = string(events.ServerReady)
	TopicServerFailed  = string(events.ServerFailed)
	TopicServerRestart = string(events.ServerRestarting)
	TopicRemote        = "remote"
	TopicEncoder       = "encoder"
	TopicSlowWake      = "vision.slow_wake"
)

// SlowWake is the elastic wake time from which a wake is "unusually long":
// a normal wake (shrink the expert cache, start the encoder) takes a few
// seconds; past this the user waited visibly for a picture.
const SlowWake = 20 * time.Second

// RestartsWorthTelling is the crash-restart count from which the server is
// "restarting repeatedly".
const RestartsWorthTelling = 3

// Rules turns state transitions into notices, at most one per topic per
// Window. The zero value is ready to use (Window defaults to 10 minutes).
type Rules struct {
	// Window is the rate limit per topic.
	Window time.Duration
	// Off silences everything (settings.Notifications == false); the
	// transitions are still tracked so turning them on later does not replay.
	Off bool

	last     map[string]time.Time
	downSent map[string]bool // topics whose last sent notice was a "down" one
}

// Observe compares prev and cur (nil: the service was not reachable) with the
// events that led from one to the other, and returns the notices to raise
// now. The first observation (prev == nil at start) raises none: the tray
// tells about changes, not about how it found things.
func (r *Rules) Observe(prev, cur *controlapi.State, evs []events.Event, now time.Time) []Notice {
	if prev == nil || cur == nil {
		return nil
	}
	var out []Notice
	for _, n := range Transitions(prev, cur, evs) {
		if r.allow(n, now) {
			out = append(out, n)
		}
	}
	if r.Off {
		return nil
	}
	return out
}

func (r *Rules) allow(n Notice, now time.Time) bool {
	if r.last == nil {
		r.last = map[string]time.Time{}
		r.downSent = map[string]bool{}
	}
	w := r.Window
	if w == 0 {
		w = 10 * time.Minute
	}
	if n.Up {
		// "Back" only answers a "down" the user saw.
		if !r.downSent[n.Topic] {
			return false
		}
		r.downSent[n.Topic] = false
		return true
	}
	if t, ok := r.last[n.Topic]; ok && now.Sub(t) < w {
		return false
	}
	r.last[n.Topic] = now
	r.downSent[n.Topic] = true
	return true
}

// Transitions lists every notice-worthy change from prev to cur, before rate
// limiting.
func Transitions(prev, cur *controlapi.State, evs []events.Event) []Notice {
	var out []Notice
	out = append(out, RelayNotices(evs)...)
	ps, cs := prev.Server, cur.Server

	// The server became ready after a start (or restarted and is ready again).
	if cs.Phase == controlapi.PhaseReady && (ps.Phase != controlapi.PhaseReady || !ps.Since.Equal(cs.Since)) {
		body := "Strata is ready"
		if cs.Model != "" {
			body += " with " + cs.Model
		}
		body += "; vision " + placementWords(cur) + "."
		n := Notice{Topic: TopicServerReady, Title: "Strata is ready", Body: body}
		if ps.Phase == controlapi.PhaseFailed {
			// Recovering from a failure answers the failure notice.
			n.Topic, n.Up = TopicServerFailed, true
		}
		out = append(out, n)
	}
	// The server failed (the service gave up starting it).
	if cs.Phase == controlapi.PhaseFailed && ps.Phase != controlapi.PhaseFailed {
		msg := cs.LastError
		if msg == "" {
			msg = cs.Detail
		}
		if msg == "" {
			msg = "the service gave up starting it"
		}
		out = append(out, Notice{Topic: TopicServerFailed, Title: "Strata stopped working", Body: msg + ". Open the tray menu and choose View logs for details.", Urgent: true})
	}
	// Crash restarts piling up.
	if cs.Restarts > ps.Restarts && cs.Restarts >= RestartsWorthTelling && cs.Phase != controlapi.PhaseFailed {
		out = append(out, Notice{Topic: TopicServerRestart, Title: "Strata keeps restarting",
			Body: fmt.Sprintf("The server stopped and was started again %d times. View logs shows why.", cs.Restarts), Urgent: true})
	}

	// The second PC, while vision runs there.
	remoteDown := false
	if settings.Placement(cur.Vision.Placement).SecondPC() && cur.Remote != nil {
		name := settings.UpperFirst(settings.Placement(cur.Vision.Placement).Name(cur.Remote.Host))
		wasUp := prev.Remote == nil || prev.Remote.Reachable || !settings.Placement(prev.Vision.Placement).SecondPC()
		switch {
		case wasUp && !cur.Remote.Reachable:
			remoteDown = true
			body := name + " does not answer"
			if cur.Remote.Reason != "" {
				body += ": " + cur.Remote.Reason
			}
			body += ". Text keeps working; pictures work again when it is back."
			out = append(out, Notice{Topic: TopicRemote, Title: "Pictures unavailable: second PC not reachable", Body: body})
		case !wasUp && cur.Remote.Reachable:
			out = append(out, Notice{Topic: TopicRemote, Title: "Second PC is back", Body: name + " answers again; pictures work again.", Up: true})
		}
		if !cur.Remote.Reachable {
			remoteDown = true
		}
	}

	// The encoder failed (not because the second PC is down: that was said).
	pe, ce := prev.Vision.Encoder, cur.Vision.Encoder
	if ce == controlapi.EncoderFailed && pe != controlapi.EncoderFailed && !remoteDown && settings.Placement(cur.Vision.Placement) != settings.PlacementOff {
		body := "Pictures cannot be read"
		if cur.Vision.Error != "" {
			body += ": " + cur.Vision.Error
		}
		body += ". Text keeps working."
		out = append(out, Notice{Topic: TopicEncoder, Title: "The vision encoder failed", Body: body, Urgent: true})
	} else if pe == controlapi.EncoderFailed && ce == controlapi.EncoderReady && prev.Vision.Placement == cur.Vision.Placement {
		out = append(out, Notice{Topic: TopicEncoder, Title: "Pictures work again", Body: "The vision encoder is running again.", Up: true})
	}

	// An elastic wake that took unusually long. The event says a wake
	// happened (the same duration twice still counts); the state has its time.
	woke := cur.Vision.LastWakeMS != prev.Vision.LastWakeMS
	for _, e := range evs {
		if e.Kind == events.EncoderWoke {
			woke = true
		}
	}
	if woke && time.Duration(cur.Vision.LastWakeMS)*time.Millisecond >= SlowWake {
		out = append(out, Notice{Topic: TopicSlowWake, Title: "Reading a picture waited for the encoder",
			Body: fmt.Sprintf("Starting the vision encoder took %.0f s. If this repeats, keep the encoder running (setup, second PC page) or check that PC.", float64(cur.Vision.LastWakeMS)/1000)})
	}
	return out
}
