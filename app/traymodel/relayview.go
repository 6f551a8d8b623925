package traymodel

import (
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// FallbackTitle is the fallback switch's menu title: "Read on this PC's CPU
// when the second PC is off", in the placements table's words.
var FallbackTitle = "Read " + settings.PlacementCPU.Words("") + " when " + settings.PlacementRemote.Name("") + " is off"

// TopicFallback and TopicWake rate-limit their notices.
const (
	TopicFallback = string(events.VisionFallback)
	TopicWake     = string(events.RemoteWake)
	TopicDegraded = string(events.EncoderDegraded)
)

// RelayView is what the relay reported, folded from events.
type RelayView struct {
	LastWhere string
	LastMS    int64
	LastAt    time.Time
	Wakes     int
	LastWake  string // the last wake's outcome in words
	Failovers int
	// Device is where the encoder really reads, from its start line
	// ("RTX 3060 Laptop GPU", "its CPU"); Degraded says why not a GPU.
	Device   string
	Degraded string
	// LastError is the last picture's reason when it failed ("" when OK).
	LastError string
}

// Fold adds evs to v.
func (v *RelayView) Fold(evs []events.Event) {
	for _, e := range evs {
		switch e.Kind {
		case events.PictureEncoded:
			d := events.Get[events.PictureEncodedDetails](e)
			if d.OK != nil && !*d.OK {
				if d.Where != events.WhereOff {
					v.LastError = e.Message
				}
				continue
			}
			v.LastError = ""
			if d.Where != "" {
				v.LastWhere = d.Where
			}
			v.LastMS = d.MS
			v.LastAt = e.Time
		case events.EncoderReady:
			if d := events.Get[events.EncoderReadyDetails](e); d.Device != "" {
				v.Device, v.Degraded = deviceWords(d.Device, d.GPU), ""
			}
		case events.EncoderDegraded:
			v.Degraded = e.Message
		case events.VisionFallback:
			v.Failovers++
		case events.RemoteWake:
			d := events.Get[events.RemoteWakeDetails](e)
			switch {
			case d.OK == nil:
				v.Wakes++
				v.LastWake = "waking it"
			case *d.OK:
				v.LastWake = "woke in " + seconds(d.WokeMS)
			default:
				v.LastWake = "did not wake"
			}
		}
	}
}

// deviceWords names the device an encoder reads on.
func deviceWords(device, gpu string) string {
	if device == "gpu" && gpu != "" {
		return gpu
	}
	if device == "gpu" {
		return "its GPU"
	}
	return "its CPU"
}

// WhereWords names a picture's place for people, in the tray's words for
// the placement it was read at (settings.Placements): "on the second PC",
// "on the CPU (fallback)".
func WhereWords(where string) string {
	switch where {
	case events.WhereRemote:
		return "on " + settings.PlacementRemote.ShortName("")
	case events.WhereFallbackCPU:
		return "on " + settings.PlacementCPU.ShortName("") + " (fallback)"
	case events.WhereLocalCPU:
		return "on " + settings.PlacementCPU.ShortName("")
	}
	return where
}

// Line is the menu's status line ("" when nothing was reported yet).
func (v RelayView) Line(now time.Time) string {
	if v.LastWhere == "" && v.Wakes == 0 && v.Failovers == 0 {
		return ""
	}
	s := "Last picture: none yet"
	if v.LastWhere != "" {
		where := WhereWords(v.LastWhere)
		if v.Device != "" && v.LastWhere == events.WhereRemote {
			where += " (" + v.Device + ")"
		}
		s = fmt.Sprintf("Last picture: %s, %s, %s", where, seconds(v.LastMS), Clock(v.LastAt, now))
	}
	if v.LastError != "" {
		s = "Last picture failed: " + v.LastError
	}
	if v.LastWake != "" {
		s += "; " + v.LastWake
	}
	if v.Failovers > 0 {
		s += fmt.Sprintf("; fallbacks: %d", v.Failovers)
	}
	return clip(s)
}

// RelayNotices are the notices the relay's events ask for: a failover (once
// per outage: the relay sends one event), the second PC back after one, and
// a wake that failed.
func RelayNotices(evs []events.Event) []Notice {
	var out []Notice
	for _, e := range evs {
		switch e.Kind {
		case events.VisionFallback:
			out = append(out, Notice{Topic: TopicFallback, Title: settings.UpperFirst(settings.PlacementCPU.Pictures("")),
				Body: "The second PC cannot be reached, so pictures are read on this PC's CPU (slower; text waits while a picture is read) until it answers again."})
		case events.RemoteReachable:
			out = append(out, Notice{Topic: TopicFallback, Up: true, Title: "The second PC is back",
				Body: settings.UpperFirst(settings.PlacementRemote.Pictures("")) + " again."})
		case events.EncoderDegraded:
			out = append(out, Notice{Topic: TopicDegraded, Title: "Pictures are read on the second PC's CPU",
				Body: e.Message + ". Run the second PC's preparation again (it looks for its GPU), or check its NVIDIA driver."})
		case events.RemoteWake:
			if ok := events.Get[events.RemoteWakeDetails](e).OK; ok != nil && !*ok {
				out = append(out, Notice{Topic: TopicWake, Title: "The second PC did not wake",
					Body: e.Message + ". Check that Wake-on-LAN is on in its firmware and network card settings."})
			}
		}
	}
	return out
}

// seconds writes milliseconds as "0.4 s", "2.8 s", "15 s".
func seconds(ms int64) string {
	if ms >= 10000 {
		return fmt.Sprintf("%d s", (ms+500)/1000)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// Seed fills a view that has seen no relay event yet (a tray started after
// the pictures) from the service's state, which folds the same events
// (service/state).
func (v *RelayView) Seed(st *controlapi.State) {
	if st == nil || v.LastWhere != "" || v.Wakes != 0 || v.Failovers != 0 {
		return
	}
	vis := st.Vision
	v.LastWhere, v.LastAt = vis.LastWhere, vis.LastPicture
	if vis.LastWhere != "" {
		v.LastMS = int64(vis.LastPictureMS)
	}
	v.Wakes, v.Failovers = vis.Wakes, vis.Fallbacks
	if vis.Device != "" {
		v.Device = deviceWords(vis.Device, vis.GPU)
	}
	v.Degraded = vis.Degraded
	switch vis.LastWake {
	case "sent":
		v.LastWake = "waking it"
	case "woke":
		v.LastWake = "woke in " + seconds(int64(vis.LastWokeMS))
	case "no_answer":
		v.LastWake = "did not wake"
	}
}
