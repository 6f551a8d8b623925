package pages

import (
	"time"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Autopilot walks the demo through every page for screenshots: on each
// settled page it calls shot(name) (which returns once the picture is taken)
// and then does what a user would. Only strata-setup's demo mode uses it.
//
// The Welcome page first shows the lending view (the role "Lend this
// PC's GPU to another PC"), then goes on. On the Second PC page it pairs
// by code when the demo's network has PCs that lend (a wrong code first),
// else by the address, with ssh; lendCode is the code the demo's lenders
// take.
func (u *UI) Autopilot(shot func(name string), lendCode string) {
	remoteStep, byCode, lent := 0, false, false
	u.onHostKeyShown = func() {
		go func() {
			shot("remote-hostkey")
			u.do(func() { u.AnswerModal(true) })
		}()
	}
	u.OnPageShown = func(p setupflow.Page) {
		name := p.String()
		if st, ok := u.lendState(); ok {
			name = "lend-off"
			if st == setupflow.LendShowing {
				name, lent = "lend", true
			}
			go func() {
				shot(name)
				if lent {
					u.do(u.Back)
				}
			}()
			return
		}
		if p == setupflow.PageWelcome && lent {
			u.do(u.Next) // pictured already
			return
		}
		if p == setupflow.PageSecondPC {
			remoteStep++
			if remoteStep == 1 {
				found, _ := u.Flow.Code.Found()
				byCode = len(found) > 0
			}
			switch {
			case remoteStep == 1 && byCode:
				name = "remote-found"
			case remoteStep == 2 && byCode:
				name = "remote-code-wrong"
			case remoteStep == 1:
				name = "remote-empty"
			case remoteStep == 2:
				name = "remote-probed"
			default:
				if byCode {
					name = "remote-code"
				}
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
			u.do(func() { u.autopilotAct(p, remoteStep, byCode, lendCode) })
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

func (u *UI) autopilotAct(p setupflow.Page, remoteStep int, byCode bool, lendCode string) {
	switch p {
	case setupflow.PageWelcome:
		if u.Flow.Lend.Available() {
			u.showLending(true)
			return
		}
		u.Next()
	case setupflow.PagePlacement:
		u.Flow.Choice.Choose(settings.PlacementRemote, nil)
		u.Next()
	case setupflow.PageSecondPC:
		switch {
		case byCode && remoteStep <= 2:
			c := u.codeW
			c.list.SetSelected(c.list.Options[0])
			c.code.SetText(lendCode)
			if remoteStep == 1 {
				c.code.SetText("ABCD-EFGH") // a wrong code first: the refusal's words
			}
			c.pair.OnTapped()
		case remoteStep == 1:
			u.remoteW.addr.SetText("gaming-laptop")
			u.remoteW.user.SetText("sam")
			u.remoteW.probe.OnTapped()
		case remoteStep == 2:
			u.remoteW.pair.OnTapped()
		default:
			u.Next()
		}
	default:
		u.Next()
	}
}
