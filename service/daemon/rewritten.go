package daemon

// Noticing that Strata's own setup rewrote the config the service runs:
// setup owns vision.exe (a relay in it is replaced by engine/strata-vision),
// drops host and api_key and puts port back to 8080. The service watches
// the config's folder (setup replaces the file by a rename), says what was
// lost in the state (config.rewritten) and offers one repair: the
// companion's placement put back through the backend, with its diff.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// configKeys are the config's keys Strata's setup drops, as the service
// last saw them (the api_key only as "set" in words, never its value; top
// holds every top-level key's JSON text, for the repair only).
type configKeys struct {
	known  bool
	host   string
	apiKey bool
	port   int
	top    map[string]string
}

func keysOf(c *strataconfig.Config) configKeys {
	top, _ := strataconfig.TopKeys(c.Raw)
	return configKeys{known: true, host: c.Host(), apiKey: c.APIKey() != "", port: c.Port(), top: top}
}

// expected is what the companion knows of r's config keys (zero: nothing).
func (r *running) expected() configKeys {
	if k := r.expect.Load(); k != nil {
		return *k
	}
	return configKeys{}
}

// ownWrite takes the companion's own change of r's config into what it
// expects: the top-level keys that differ between the backup of the file
// before the change and the file now follow the file (a move off the
// second PC drops "env"; that is no loss). What Strata's setup changed
// before stays expected as it was.
func (r *running) ownWrite(backup string) {
	old := r.expect.Load()
	if old == nil || !old.known || backup == "" {
		return
	}
	braw, err := strataconfig.ReadFile(backup) // as the folder's owner (no link followed)
	if err != nil {
		return
	}
	c, err := strataconfig.Read(r.path())
	if err != nil {
		return
	}
	was, err1 := strataconfig.TopKeys(braw)
	now, err2 := strataconfig.TopKeys(c.Raw)
	if err1 != nil || err2 != nil {
		return
	}
	k := *old
	k.top = map[string]string{}
	for key, v := range old.top {
		k.top[key] = v
	}
	for key := range was {
		if _, ok := now[key]; !ok {
			delete(k.top, key)
		}
	}
	for key, v := range now {
		if was[key] != v {
			k.top[key] = v
			switch key {
			case "host":
				k.host = c.Host()
			case "port":
				k.port = c.Port()
			case "api_key":
				k.apiKey = c.APIKey() != ""
			}
		}
	}
	r.expect.Store(&k)
}

// restoredKeys are the top-level keys a repair puts back: the ones Strata's
// setup dropped (any the companion knew, but vision, which the placement
// repairs) and host, port and api_key when setup changed them. What setup
// rebuilds on every run (exe, args, its paths) stays setup's.
func restoredKeys(now, before map[string]string) []string {
	var out []string
	for k, v := range before {
		if k == "vision" {
			continue
		}
		cur, ok := now[k]
		switch {
		case !ok:
			out = append(out, k)
		case (k == "host" || k == "port" || k == "api_key") && cur != v:
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// realPlacement is where c has pictures read: Strata's own encoder reads
// them on this PC (on its GPU or CPU as "gpu" says) whatever "remote" says;
// only the relay sends them elsewhere.
func realPlacement(c *strataconfig.Config) settings.Placement {
	if c.Vision != nil && !c.NamesRelay() {
		if c.Vision.GPU {
			return settings.PlacementGPU
		}
		return settings.PlacementCPU
	}
	return c.Placement()
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
		now, want := describePlacement(realPlacement(c)), describePlacement(s.Vision)
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
		for _, k := range restoredKeys(now.top, before.top) {
			if _, ok := now.top[k]; !ok && k != "host" && k != "api_key" && k != "port" {
				out = append(out, k+" was dropped")
			}
		}
	}
	sort.Strings(out)
	return out
}

// describePlacement is where p has pictures read, in the placements
// table's words ("on this PC's GPU"); "nowhere (vision off)" for none.
func describePlacement(p settings.Placement) string {
	if !p.ReadsPictures() {
		return "nowhere (vision " + settings.PlacementOff.Info().Name + ")"
	}
	return p.Words("")
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
	found := Rewritten(c, s, r.expected())
	st := d.tracker.Snapshot()
	if fmt.Sprint(found) == fmt.Sprint(st.Config.Rewritten) {
		return
	}
	msg := "the config is as the companion set it up again"
	if len(found) > 0 {
		msg = fmt.Sprintf("%s was rewritten (by Strata's setup?): %s. Put back what the companion had with strata-service vision repair, or the tray's item", filepath.Base(r.path()), found[0])
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
	if !pathcmp.Same(filepath.Dir(sf), filepath.Dir(r.path())) {
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
				if (filepath.Base(ev.Name) == name || pathcmp.Same(ev.Name, sf)) && ev.Op != fsnotify.Chmod {
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

// repairSource finds what the repair puts back: the keys (restoredKeys)
// and their text in the companion's last known good config, the newest
// backup (the companion's own or Strata's .bak) that agrees with what the
// service saw at start; without one, what the service saw at start. When
// the service started on the rewritten file already (it knows nothing
// lost), the last good config is the newest backup that names the relay.
func repairSource(r *running, c *strataconfig.Config, s *settings.Settings) (keys []string, want map[string]string, from string) {
	now, _ := strataconfig.TopKeys(c.Raw)
	before := r.expected().top
	keys = restoredKeys(now, before)
	backups := strataconfig.Backups(r.path())
	relayWanted := s.Vision == settings.PlacementRemote || s.Vision == settings.PlacementCPU
	if len(keys) == 0 && relayWanted && !c.NamesRelay() {
		for _, b := range backups {
			bc, err := strataconfig.Read(b)
			if err != nil || bc.Err() != nil || !bc.NamesRelay() {
				continue
			}
			if bt, err := strataconfig.TopKeys(bc.Raw); err == nil {
				if k := restoredKeys(now, bt); len(k) > 0 {
					return k, bt, b
				}
			}
			break
		}
	}
	if len(keys) == 0 {
		return nil, nil, ""
	}
	for _, b := range backups {
		raw, err := strataconfig.ReadFile(b) // as the folder's owner (no link followed)
		if err != nil {
			continue
		}
		bt, err := strataconfig.TopKeys(raw)
		if err != nil {
			continue
		}
		agrees := true
		for _, k := range keys {
			if bt[k] != before[k] {
				agrees = false
				break
			}
		}
		if agrees {
			return keys, bt, b
		}
	}
	return keys, before, "the config as the service last started it"
}

// keyWords says in words what putting key back does (never a secret's value).
func keyWords(k string, now, want map[string]string) string {
	cur, had := now[k]
	switch {
	case strataconfig.SecretKey(k):
		return k + " put back (Strata's setup dropped it; its value is not shown)"
	case !had:
		return fmt.Sprintf("%s back to %s (Strata's setup dropped it)", k, strings.Trim(want[k], `"`))
	}
	return fmt.Sprintf("%s back to %s (Strata's setup set %s)", k, strings.Trim(want[k], `"`), strings.Trim(cur, `"`))
}

// RepairConfig is POST /v1/config/repair: what Strata's setup took from the
// companion's setup put back, through the backend, with one restart: the
// placement the settings say and the keys setup dropped or changed (port,
// host, api_key, any other) from the companion's last known good config.
// A dry run says what (Changes, Diff) and changes nothing; a repair while
// Strata answers a request is refused unless confirmed.
func (d *Daemon) RepairConfig(ctx context.Context, req controlapi.RepairRequest) (*controlapi.RepairResponse, error) {
	done, err := d.beginOp("a repair of the config")
	if err != nil {
		return nil, err
	}
	defer done()
	r := d.current()
	if r.owner == nil {
		return nil, conflict("no Strata install to repair: %v", r.resolveErr)
	}
	s, err := settings.LoadDefault()
	if err != nil {
		return nil, err
	}
	c, err := strataconfig.Read(r.path())
	if err != nil {
		return nil, conflict("%v", err)
	}
	out := &controlapi.RepairResponse{}
	pl := s.Vision
	var vreq *controlapi.VisionRequest
	if pl.Valid() {
		vreq = &controlapi.VisionRequest{Placement: string(pl), DryRun: true}
		if pl == settings.PlacementCPU && s.CPUThreads > 0 {
			vreq.Threads = s.CPUThreads
		}
		dry, err := applyVision(ctx, r.owner, r.sup, *vreq)
		if err != nil {
			return nil, err
		}
		if dry.RestartNeeded {
			out.Diff += dry.Diff
			out.RestartNeeded = true
			out.Changes = append(out.Changes, "pictures back "+describePlacement(pl)+" through the companion's relay")
			if pl == settings.PlacementGPU || pl == settings.PlacementOff {
				out.Changes[len(out.Changes)-1] = "pictures back " + describePlacement(pl)
			}
		} else {
			vreq = nil
		}
	}
	keys, want, from := repairSource(r, c, s)
	now, _ := strataconfig.TopKeys(c.Raw)
	if len(keys) > 0 {
		kdry, err := r.owner.RestoreKeys(ctx, want, keys, from, true)
		if err != nil {
			return nil, err
		}
		if kdry.Diff != "" {
			out.Diff += kdry.Diff
			out.RestartNeeded = true
			out.From = from
			for _, k := range keys {
				out.Changes = append(out.Changes, keyWords(k, now, want))
			}
		} else {
			keys = nil
		}
	}
	if !out.RestartNeeded {
		out.Message = "Nothing to repair: the config has what the companion set up."
		return out, nil
	}
	busy := d.busy(ctx)
	out.Busy = busy
	what := "Strata will stop and start again with them (text requests wait 30-90 s meanwhile)"
	if busy {
		what += "; it is answering a request now, which will be cut"
	}
	src := ""
	if from != "" {
		src = " from " + from
	}
	out.Message = fmt.Sprintf("The repair puts back%s: %s. %s.", src, strings.Join(out.Changes, "; "), what)
	if req.DryRun {
		out.Message += " Dry run: nothing was changed."
		return out, nil
	}
	if busy && !req.Confirm {
		return nil, controlapi.Busy(errors.New("Strata is answering a request now: the repair restarts it. Ask again with confirm to go ahead, or wait until it is done; nothing was changed"))
	}
	no := false
	if vreq != nil {
		vreq.DryRun, vreq.Restart = false, &no
		res, err := applyVision(ctx, r.owner, r.sup, *vreq)
		if err != nil {
			return nil, err
		}
		out.Written = out.Written || res.Written
	}
	if len(keys) > 0 {
		res, err := r.owner.RestoreKeys(ctx, want, keys, from, false)
		if err != nil {
			return nil, err
		}
		out.Written = out.Written || res.ConfigWritten
	}
	if out.Written && r.sup != nil {
		if err := r.sup.Restart(ctx); err != nil {
			return out, err
		}
		out.Restarted = true
	}
	out.Message = fmt.Sprintf("Put back%s: %s. Strata is starting again with them.", src, strings.Join(out.Changes, "; "))
	d.checkConfig(r)
	return out, nil
}
