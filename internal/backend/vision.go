package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// VisionResult says what a vision change did (or, for a dry run, would do).
type VisionResult struct {
	Placement settings.Placement // where pictures are read afterwards
	Diff      string             // the config's diff ("" when the config is not edited)
	Notes     []string           // what the plan chose on its own
	// ConfigWritten / Backup: the config was saved; the old one is in Backup.
	ConfigWritten bool
	Backup        string
	// SettingsChanged: the settings were saved.
	SettingsChanged bool
	// RestartNeeded: the change edits Strata's config, which Strata reads
	// only at start (moves to or from this PC's GPU; off from the GPU).
	RestartNeeded bool
	// Message is the sentence to show before (dry run) or after the change.
	Message string
	// NewSecondPC is set when the second PC changed (pair it next).
	NewSecondPC string
}

// Response is the result on the wire (POST /v1/vision; Restarted is the
// caller's to set).
func (r *VisionResult) Response() *controlapi.VisionResponse {
	return &controlapi.VisionResponse{Diff: r.Diff, Written: r.ConfigWritten, Backup: r.Backup, RestartNeeded: r.RestartNeeded,
		Message: r.Message, Placement: string(r.Placement), SettingsChanged: r.SettingsChanged, Notes: r.Notes, NewSecondPC: r.NewSecondPC}
}

// Placement is where pictures are read now: a config that names the relay
// leaves it to the settings (second PC, CPU, off).
func Placement(c *strataconfig.Config, s *settings.Settings) settings.Placement {
	if c.NamesRelay() {
		switch s.Vision {
		case settings.PlacementRemote, settings.PlacementCPU, settings.PlacementOff:
			return s.Vision
		}
		return settings.PlacementRemote
	}
	if c.Vision != nil {
		// Strata's own encoder reads pictures on this PC, whatever a
		// "remote" key left in the block says (Strata's setup keeps it when
		// it replaces the relay): only the relay sends them elsewhere.
		if c.Vision.GPU {
			return settings.PlacementGPU
		}
		return settings.PlacementCPU
	}
	return c.Placement()
}

// Placement reads the config and the settings and says where pictures are
// read now.
func (b *Backend) Placement() (settings.Placement, error) {
	c, err := b.config()
	if err != nil {
		return "", err
	}
	s, err := b.Settings()
	if err != nil {
		return "", err
	}
	return Placement(c, s), nil
}

func describe(p settings.Placement) string { return p.Words("") }

// SetVision moves the image encoder. Among the second PC, this PC's CPU and
// off, once the config names the relay, only the settings change (the relay
// reads them per picture: no restart). Moves to or from this PC's GPU edit
// the config, and RestartNeeded says Strata must restart. Placement
// "restore" puts the newest backup of the config back.
func (b *Backend) SetVision(ctx context.Context, req controlapi.VisionRequest) (*VisionResult, error) {
	if req.Placement == "restore" {
		return b.restore(ctx, req.Backup, req.DryRun, restarts(req))
	}
	if req.Backup != "" {
		return nil, &RequestError{errors.New("backup is only for restore")}
	}
	pl := settings.Placement(req.Placement)
	if !pl.Valid() {
		return nil, &RequestError{fmt.Errorf("unknown placement %q: use gpu, cpu, remote, off or restore", req.Placement)}
	}
	var ep sshx.Endpoint
	if req.Host != "" {
		if pl != settings.PlacementRemote {
			return nil, &RequestError{errors.New("host is only for remote")}
		}
		var err error
		if ep, err = sshx.ParseEndpoint(req.Host); err != nil {
			return nil, &RequestError{err}
		}
	}
	if req.Device != nil && pl != settings.PlacementGPU {
		return nil, &RequestError{errors.New("device is only for gpu")}
	}
	if req.Threads < 0 || req.Threads > 0 && pl != settings.PlacementCPU {
		return nil, &RequestError{errors.New("threads is only for cpu, and 1 or more")}
	}
	var vram int
	if pl != settings.PlacementOff && b.o.VRAMTotalMiB != nil {
		vram = b.o.VRAMTotalMiB(ctx, b.o.ConfigPath) // before the lock: it may run nvidia-smi
	}

	// A dry run writes nothing: it reads without the cross-process lock
	// (every write is an atomic rename), so a normal user may preview.
	unlock, err := b.lockFor(ctx, req.DryRun)
	if err != nil {
		return nil, err
	}
	defer unlock()
	before, _ := os.ReadFile(b.o.SettingsPath)
	s, err := settings.Load(b.o.SettingsPath)
	if err != nil {
		return nil, err
	}
	// The second PC is checked first: a missing host is the request's
	// fault whatever the config says.
	newPC := ""
	if pl == settings.PlacementRemote {
		switch {
		case ep.Host != "":
			if s.Remote == nil || s.Remote.Host != ep.Host || s.Remote.Port != ep.Port || (ep.User != "" && s.Remote.User != ep.User) {
				// Another PC: its pinned key and paths belong to the old one.
				s.Remote = &settings.Remote{Host: ep.Host, User: ep.User, Port: ep.Port}
				newPC = req.Host
			}
		case s.Remote == nil || s.Remote.Host == "":
			return nil, &RequestError{errors.New("say which PC reads the pictures: host [user@]host[:port] (or pair one first)")}
		}
	}
	c, err := b.config()
	if err != nil {
		return nil, asRequest(err)
	}
	if err := c.EditErr(); err != nil { // lazy loading with vision is fixed below
		return nil, &RequestError{fmt.Errorf("not changing it: %w", err)}
	}
	from := Placement(c, s)
	s.StrataRoot, s.ConfigPath, s.Vision = b.o.StrataRoot, c.Path, pl
	res := &VisionResult{Placement: pl, NewSecondPC: newPC}
	if pl == settings.PlacementCPU && req.Threads > 0 {
		s.CPUThreads = req.Threads
	}

	var plan *strataconfig.VisionRequest
	relayPlaces := pl == settings.PlacementRemote || pl == settings.PlacementCPU || pl == settings.PlacementOff
	switch {
	case pl == settings.PlacementOff && c.LazyWithVision():
		// Strata refuses lazy loading with vision: off takes the vision
		// block out of the config, so the lazy loading asked for works.
		plan = &strataconfig.VisionRequest{Placement: pl, VRAMTotalMiB: vram}
	case relayPlaces && c.NamesRelay() && c.LazyWithVision():
		// The relay stays; the plan turns lazy loading off (in the diff).
		plan = &strataconfig.VisionRequest{Placement: settings.PlacementRemote, RelayExe: b.o.RelayExe, SettingsPath: b.o.SettingsPath, VRAMTotalMiB: vram}
	case relayPlaces && c.NamesRelay():
		// The relay routes by the settings: nothing to edit in the config.
	case pl == settings.PlacementRemote || pl == settings.PlacementCPU:
		plan = &strataconfig.VisionRequest{Placement: settings.PlacementRemote, RelayExe: b.o.RelayExe, SettingsPath: b.o.SettingsPath, VRAMTotalMiB: vram}
	default:
		plan = &strataconfig.VisionRequest{Placement: pl, Device: req.Device, VRAMTotalMiB: vram}
	}
	var ch *strataconfig.Change
	if plan != nil {
		if ch, err = strataconfig.PlanVision(c.Path, *plan); err != nil {
			return nil, asRequest(err)
		}
		res.Diff, res.Notes = ch.Diff(), ch.Notes
		res.RestartNeeded = ch.Changed()
	}
	if c.NamesRelay() || plan != nil && plan.Placement == settings.PlacementRemote {
		s.LocalEncoder = b.localEncoder()
	}
	sText, err := settings.Encode(s)
	if err != nil {
		return nil, err
	}
	settingsChange := string(sText) != string(before)
	switch {
	case res.RestartNeeded && !restarts(req):
		what := "it reads pictures " + describe(pl)
		if pl == settings.PlacementOff {
			what = "pictures are off"
		}
		res.Message = fmt.Sprintf("%s: %s from its next start.", notRestarted, what)
	case res.RestartNeeded:
		verb := "read pictures " + describe(pl)
		if pl == settings.PlacementOff {
			verb = "turn pictures off"
		}
		res.Message = fmt.Sprintf("Strata will restart to %s (it sizes its GPU memory only at start): text requests wait while it starts again (30-90 s).", verb)
	case from == pl && !settingsChange:
		res.Message = fmt.Sprintf("Pictures are already read %s: nothing to change.", describe(pl))
	default:
		res.Message = fmt.Sprintf("Pictures will be read %s from the next picture on; Strata keeps running (no restart).", describe(pl))
		if pl == settings.PlacementOff {
			res.Message = "Pictures will be refused from the next one on (vision off); Strata keeps running (no restart)."
		}
	}
	if req.DryRun {
		return res, nil
	}

	// The settings first: when the config cannot be written they are put
	// back, so the two never disagree.
	if settingsChange {
		if err := settings.WriteBytes(b.o.SettingsPath, sText); err != nil {
			return nil, explain(err, b.o.SettingsPath)
		}
		res.SettingsChanged = true
	}
	if ch != nil && ch.Changed() {
		backup, err := ch.Apply()
		if err != nil {
			if res.SettingsChanged {
				if rerr := b.putBack(before); rerr != nil {
					err = fmt.Errorf("%w; putting the settings back failed too (%v): check %s", err, rerr, b.o.SettingsPath)
				}
			}
			if errors.Is(err, strataconfig.ErrChangedOnDisk) {
				return nil, &ConflictError{err}
			}
			return nil, explain(err, c.Path)
		}
		res.ConfigWritten, res.Backup = true, backup
	}
	if res.SettingsChanged || res.ConfigWritten {
		b.publish(events.New("pictures are now read "+describe(pl), events.ConfigChangedDetails{Path: c.Path, Placement: string(pl), Backup: res.Backup,
			ConfigWritten: res.ConfigWritten, RestartNeeded: res.RestartNeeded}))
	}
	return res, nil
}

// putBack restores the settings file's earlier bytes (none: no file).
func (b *Backend) putBack(before []byte) error {
	if before == nil {
		return os.Remove(b.o.SettingsPath)
	}
	return settings.WriteBytes(b.o.SettingsPath, before)
}

// notRestarted begins what a config change means when no one restarts
// Strata after it (the request says restart: false: this program has no
// service beside it, or the wizard restarts it later).
const notRestarted = "Strata reads its config only at start and is not restarted now"

// restarts says whether whoever makes req restarts Strata after a config
// write (the service does unless the request says restart: false).
func restarts(req controlapi.VisionRequest) bool { return req.Restart == nil || *req.Restart }

// restore puts the newest backup of the config back and records the
// placement it has in the settings.
func (b *Backend) restore(ctx context.Context, backup string, dryRun, restart bool) (*VisionResult, error) {
	unlock, err := b.lockFor(ctx, dryRun)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := b.config(); err != nil {
		return nil, asRequest(err)
	}
	var ch *strataconfig.Change
	if backup == "" {
		if ch, _, err = strataconfig.PlanRestore(b.o.ConfigPath); err != nil {
			return nil, &RequestError{err}
		}
	} else if ch, err = b.planRestoreFrom(backup); err != nil {
		return nil, err
	}
	before, _ := os.ReadFile(b.o.SettingsPath)
	s, err := settings.Load(b.o.SettingsPath)
	if err != nil {
		return nil, err
	}
	restored, err := strataconfig.Parse(ch.Path, ch.New)
	if err != nil {
		return nil, &RequestError{err}
	}
	pl := Placement(restored, s)
	// The settings follow the restored config; absent settings stay
	// absent (a first setup being undone leaves none behind). A config
	// whose pictures are read by Strata's own encoder on the CPU is none of
	// the companion's placements (its cpu goes through the relay): the
	// settings then name none, so the restored config is not reported as
	// rewritten by Strata's setup (daemon.Rewritten) nor offered for repair.
	if !restored.NamesRelay() && before != nil {
		s.Vision = pl
		if pl.Info().RelayRouted && pl != settings.PlacementOff {
			s.Vision = ""
		}
	}
	res := &VisionResult{Placement: pl, Diff: ch.Diff(), Notes: ch.Notes, RestartNeeded: ch.Changed(),
		Message: "Strata will restart to use the restored config (it reads it only at start)."}
	if !restart {
		res.Message = notRestarted + ": it uses the restored config from its next start."
	}
	if dryRun {
		return res, nil
	}
	sText, err := settings.Encode(s)
	if err != nil {
		return nil, err
	}
	if before != nil && string(sText) != string(before) {
		if err := settings.WriteBytes(b.o.SettingsPath, sText); err != nil {
			return nil, explain(err, b.o.SettingsPath)
		}
		res.SettingsChanged = true
	}
	written, err := ch.Apply()
	if err != nil {
		if res.SettingsChanged {
			_ = b.putBack(before)
		}
		if errors.Is(err, strataconfig.ErrChangedOnDisk) {
			return nil, &ConflictError{err}
		}
		return nil, explain(err, ch.Path)
	}
	res.ConfigWritten, res.Backup = true, written
	b.publish(events.New("the config was restored from a backup; pictures are read "+describe(pl), events.ConfigChangedDetails{Path: ch.Path, Placement: string(pl), Backup: written,
		ConfigWritten: true, RestartNeeded: true}))
	return res, nil
}

// asRequest marks a plan's refusal (a config Strata would not start with,
// a missing encoder) as the request's fault; read errors stay as they are.
func asRequest(err error) error {
	var re *RequestError
	if errors.As(err, &re) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return err
	}
	return &RequestError{err}
}

// planRestoreFrom plans putting back one named backup of the config (it
// must be one of the config's own backups).
func (b *Backend) planRestoreFrom(backup string) (*strataconfig.Change, error) {
	cfg, err := filepath.Abs(b.o.ConfigPath)
	if err != nil {
		return nil, err
	}
	cfg = strataconfig.RealPath(cfg) // no link followed in the owner's folder
	known := false
	for _, p := range strataconfig.Backups(cfg) {
		if filepath.Clean(p) == filepath.Clean(backup) {
			known = true
		}
	}
	if !known {
		return nil, &RequestError{fmt.Errorf("%s is not a backup of %s: name one of its backups (%s.bak-...)", backup, cfg, filepath.Base(cfg))}
	}
	// Both with the rights of the folder's owner: a backup that is a link
	// (to a root-only file) is refused, never read by root.
	cur, err := strataconfig.ReadFile(cfg)
	if err != nil {
		return nil, err
	}
	data, err := strataconfig.ReadFile(backup)
	if err != nil {
		return nil, err
	}
	if _, err := strataconfig.Parse(cfg, data); err != nil {
		return nil, &RequestError{fmt.Errorf("the backup %s is not a valid config: %w", backup, err)}
	}
	return &strataconfig.Change{Path: cfg, Old: cur, New: data, Notes: []string{"putting back " + backup}}, nil
}
