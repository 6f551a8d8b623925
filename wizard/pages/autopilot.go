package pages

import (
	"time"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Autopilot walks the demo through every page for screenshots: on each
// settled page it calls shot(name) (which returns once the picture is taken)
// and then does what a user would. Only strata-setup's demo mode uses it.
func (u *UI) Autopilot(shot func(name string)) {
	remoteStep := 0
	u.onHostKeyShown = func() {
		go func() {
			shot("remote-hostkey")
			u.do(func() { u.AnswerModal(true) })
		}()
	}
	u.OnPageShown = func(p setupflow.Page) {
		name := p.String()
		if p == setupflow.PageSecondPC {
			remoteStep++
			switch remoteStep {
			case 1:
				name = "remote-empty"
			case 2:
				name = "remote-probed"
			default:
				// Paired and prepared: show the options below.
				if u.remoteW.scroll != nil {
					u.remoteW.scroll.ScrollToBottom()
				}
			}
		}
		go func() {
			shot(name)
			if p == setupflow.PagePlacement && u.Flow.Measure.Available() {
				u.autopilotTrials(shot)
			}
			u.do(func() { u.autopilotAct(p, remoteStep) })
		}()
	}
	if u.hasSettled {
		u.settled()
	}
}

// autopilotTrials measures the three places through the page, with a
// shot while one runs and two after (the figures, then the chart).
func (u *UI) autopilotTrials(shot func(string)) {
	for _, p := range settings.Measurable() {
		done := make(chan struct{})
		u.do(func() {
			u.pics.ts.onEnd = func() { close(done) }
			u.startTrial(p, u.pics.ts, u.pics.rebuild)
		})
		if p == settings.PlacementCPU {
			time.Sleep(time.Second) // the demo's trial takes six steps of 0.3 s
			shot("placement-measuring")
		}
		<-done
	}
	shot("placement-measured")
	u.do(func() { u.pics.scroll.ScrollToBottom() })
	time.Sleep(300 * time.Millisecond)
	shot("placement-chart")
	u.do(func() { u.pics.scroll.ScrollToTop() })
}

func (u *UI) autopilotAct(p setupflow.Page, remoteStep int) {
	switch p {
	case setupflow.PagePlacement:
		u.Flow.Choice.Choose(settings.PlacementRemote, nil)
		u.Next()
	case setupflow.PageSecondPC:
		switch remoteStep {
		case 1:
			u.remoteW.addr.SetText("gaming-laptop")
			u.remoteW.user.SetText("sam")
			u.remoteW.probe.OnTapped()
		case 2:
			u.remoteW.pair.OnTapped()
		default:
			u.Next()
		}
	case setupflow.PageDone:
		u.Next()
	default:
		u.Next()
	}
}
