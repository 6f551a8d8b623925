package daemon

// Noticing that Strata's own setup rewrote the config the service runs:
// setup owns vision.exe (a relay in it is replaced by engine/strata-vision),
// drops host and api_key and puts port back to 8080. The service watches
// the config's folder (setup replaces the file by a rename), says what was
// lost in the state (config.rewritten) and offers one repair: the
// companion's placement put back through the backend, with its diff.

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// configKeys are the config's keys Strata's setup drops, as the service
// last saw them (the api_key only as "set", never its value).
type configKeys struct {
	known  bool
	host   string
	apiKey bool
	port   int
}

func keysOf(c *strataconfig.Config) configKeys {
	return configKeys{known: true, host: c.Host(), apiKey: c.APIKey() != "", port: c.Port()}
}

// Rewritten lists what was lost of the companion's setup in c: the relay
// replaced while the settings route pictures through it, and host,
// api_key or port dropped against what was there before.
func Rewritten(c *strataconfig.Config, s *settings.Settings, before configKeys) []string {
	var out []string
	if !c.NamesRelay() && (s.Vision == settings.PlacementRemote || s.Vision == settings.PlacementCPU) {
		exe := "no encoder"
		if c.Vision != nil {
			exe = c.Vision.Exe
		}
		now, want := describePlacement(c.Placement()), describePlacement(s.Vision)
		if now == want {
			// The same place, but by Strata's own encoder: the relay's
			// fallback, wake and idle stop no longer apply.
			out = append(out, fmt.Sprintf("the relay was replaced by %s: pictures are read %s by Strata's own encoder, not through the companion's relay", exe, now))
		} else {
			out = append(out, fmt.Sprintf("the relay was replaced by %s: pictures are read %s, not %s as the companion set", exe, now, want))
		}
	}
	if before.known {
		now := keysOf(c)
		if before.host != now.host {
			out = append(out, fmt.Sprintf("host went from %s to %s (other PCs on the network no longer reach Strata)", before.host, now.host))
		}
		if before.apiKey && !now.apiKey {
			out = append(out, "api_key was dropped (Strata now answers without a key)")
		}
		if before.port != now.port {
			out = append(out, fmt.Sprintf("port went from %d to %d (clients set to %d will not find Strata after its next start)", before.port, now.port, before.port))
		}
	}
	sort.Strings(out)
	return out
}

func describePlacement(p settings.Placement) string {
	switch p {
	case settings.PlacementGPU:
		return "on this PC's GPU"
	case settings.PlacementCPU:
		return "on this PC's CPU"
	case settings.PlacementRemote:
		return "on the second PC"
	}
	return "nowhere (vision off)"
}

// checkConfig compares r's config with what the companion set up and
// publishes config.rewritten when that changed (an empty list: as set).
func (d *Daemon) checkConfig(r *running) {
	c, err := strataconfig.Read(r.path())
	if err != nil {
		return
	}
	s, err := settings.LoadDefault()
	if err != nil {
		return
	}
	found := Rewritten(c, s, r.expect)
	st := d.tracker.Snapshot()
	if fmt.Sprint(found) == fmt.Sprint(st.Config.Rewritten) {
		return
	}
	msg := "the config is as the companion set it up again"
	if len(found) > 0 {
		msg = fmt.Sprintf("%s was rewritten (by Strata's setup?): %s. Put the companion's placement back with strata-service vision repair, or the tray's item", filepath.Base(r.path()), found[0])
	}
	d.publish(events.New(msg, events.ConfigRewrittenDetails{Path: r.path(), Findings: found}))
}

// watchConfig checks r's config now and whenever its folder changes, until ctx ends.
func (d *Daemon) watchConfig(ctx context.Context, r *running) {
	d.checkConfig(r)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.logf("not watching %s for changes: %v", r.path(), err)
		return
	}
	if err := w.Add(filepath.Dir(r.path())); err != nil {
		w.Close()
		d.logf("not watching %s for changes: %v", r.path(), err)
		return
	}
	name := filepath.Base(r.path())
	// The settings say what the companion set up: a change there (the
	// setup saving its choice) is checked again too.
	sf := locations.SettingsFile()
	if !samePath(filepath.Dir(sf), filepath.Dir(r.path())) {
		_ = w.Add(filepath.Dir(sf)) // not there yet: the config's changes alone
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer w.Close()
		// A change is looked at once the files settle: the backend writes
		// the settings and then the config, a moment apart.
		var settle *time.Timer
		var settled <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				if settle != nil {
					settle.Stop()
				}
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if (filepath.Base(ev.Name) == name || samePath(ev.Name, sf)) && ev.Op != fsnotify.Chmod {
					if settle != nil {
						settle.Stop()
					}
					settle = time.NewTimer(SettleDelay)
					settled = settle.C
				}
			case <-settled:
				settled = nil
				d.checkConfig(r)
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
}

// SettleDelay is how long the config and the settings must stay unchanged
// before the service compares them (a change of the companion's own writes
// both, the settings first).
var SettleDelay = 300 * time.Millisecond

// RepairConfig is POST /v1/config/repair: the placement the settings say
// put back into the config through the backend (the diff says what), and
// Strata restarted to read it.
func (d *Daemon) RepairConfig(ctx context.Context) (*controlapi.RepairResponse, error) {
	r := d.current()
	if r.owner == nil {
		return nil, conflict("no Strata install to repair: %v", r.resolveErr)
	}
	s, err := settings.LoadDefault()
	if err != nil {
		return nil, err
	}
	pl := s.Vision
	if !pl.Valid() {
		return nil, conflict("the settings record no placement to put back; choose one (strata-service vision ...)")
	}
	req := controlapi.VisionRequest{Placement: string(pl)}
	if pl == settings.PlacementCPU && s.CPUThreads > 0 {
		req.Threads = s.CPUThreads
	}
	resp, err := applyVision(ctx, r.owner, r.sup, req)
	if err != nil {
		return nil, err
	}
	out := &controlapi.RepairResponse{Diff: resp.Diff, Message: resp.Message}
	c, err := strataconfig.Read(r.path())
	if err == nil {
		var rest []string
		for _, f := range Rewritten(c, s, r.expect) {
			rest = append(rest, f)
		}
		if len(rest) > 0 {
			out.Message += " Still different: " + fmt.Sprint(rest) + " (set them again in Strata's setup, or in the config)."
		}
	}
	d.checkConfig(r)
	return out, nil
}
