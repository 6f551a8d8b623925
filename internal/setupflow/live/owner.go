package live

// The wizard changes Strata's config and the companion's settings only by
// asking their owner (internal/backend): through the service's control API
// when the service runs (it does once Apply installed and started it), and
// only when no service answers (headless first setup, tests with a stand-in
// service) through the same backend in this process, under the same
// cross-process lock.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// onLocalWrite runs before this process writes through its own backend
// (no service answered). Tests set it to prove a running service did it.
var onLocalWrite = func(what string) {}

// owner reaches the backend: the service's API, else an in-process one.
type owner struct {
	SettingsPath string
	RelayExe     string
	Client       func() (*controlapi.Client, error)
	VRAM         func() int
}

// service is a client of the running service, nil when none answers.
func (o owner) service(ctx context.Context) *controlapi.Client {
	newClient := o.Client
	if newClient == nil {
		newClient = controlapi.NewClient
	}
	c, err := newClient()
	if err != nil {
		return nil
	}
	if _, err := c.State(ctx); err != nil {
		return nil
	}
	return c
}

// local is the same backend in this process, for the config at path.
func (o owner) local(path string) *backend.Backend {
	return backend.New(backend.Options{SettingsPath: o.SettingsPath, StrataRoot: filepath.Dir(path), ConfigPath: path, RelayExe: o.RelayExe,
		VRAMTotalMiB: func(context.Context, string) int {
			if o.VRAM == nil {
				return 0
			}
			return o.VRAM()
		}})
}

// setVision sends req to the owner and says what it did.
func (o owner) setVision(ctx context.Context, path string, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	if c := o.service(ctx); c != nil {
		// The file this change is for: the service refuses it (409) when
		// it runs another, so it is never made to the wrong file.
		if req.Config == "" {
			req.Config = path
		}
		resp, err := c.SetVision(ctx, req)
		var se *controlapi.StatusError
		if errors.As(err, &se) {
			return nil, errors.New(se.Message)
		}
		return resp, err
	}
	if !req.DryRun {
		onLocalWrite("vision " + req.Placement)
	}
	res, err := o.local(path).SetVision(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Response(), nil
}

func visionRequest(c setupflow.VisionChoice) controlapi.VisionRequest {
	no := false
	// The flow restarts Strata itself once the config and the settings
	// are both saved.
	return controlapi.VisionRequest{Placement: string(c.Placement), Device: c.Device, Threads: c.Threads, Host: c.Host, Restart: &no}
}

// ownerPlan is a planned change: the owner's dry-run diff, applied by the
// owner with the same request.
type ownerPlan struct {
	o     owner
	path  string
	req   controlapi.VisionRequest
	diff  string
	notes []string
}

func (p *ownerPlan) Diff() string    { return p.diff }
func (p *ownerPlan) Notes() []string { return p.notes }
func (p *ownerPlan) Apply() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := p.o.setVision(ctx, p.path, p.req)
	if err != nil {
		return "", err
	}
	return resp.Backup, nil
}

// saveSettings records n through the owner: the placement when that needs
// no config edit (a config edit is the plan's, or a restore's), then the
// second PC's record (pairing, prepare results) and notifications.
func (o owner) saveSettings(ctx context.Context, n *settings.Settings) error {
	if n.ConfigPath == "" || !n.Vision.Valid() {
		return errors.New("the settings name no Strata config or placement: choose them in the wizard first")
	}
	req := controlapi.VisionRequest{Placement: string(n.Vision), DryRun: true}
	if n.Vision == settings.PlacementRemote && n.Remote != nil && n.Remote.Host != "" {
		req.Host = endpoint(n.Remote)
	}
	if n.Vision == settings.PlacementCPU && n.CPUThreads > 0 {
		req.Threads = n.CPUThreads
	}
	dry, err := o.setVision(ctx, n.ConfigPath, req)
	if err != nil {
		return err
	}
	if !dry.RestartNeeded {
		req.DryRun = false
		no := false
		req.Restart = &no
		if _, err := o.setVision(ctx, n.ConfigPath, req); err != nil {
			return err
		}
	}
	// The second PC the wizard paired and prepared (its MemoryRecorder's
	// record) replaces the recorded one; none where one is recorded (the
	// rollback to settings without one) unpairs it.
	var rec *controlapi.RemoteRecord
	if n.Remote != nil && n.Remote.Host != "" {
		r := *n.Remote
		rec = &controlapi.RemoteRecord{Replace: &r}
	} else if cur, err := settings.Load(o.SettingsPath); err == nil && cur.Remote != nil {
		rec = &controlapi.RemoteRecord{Unpair: true}
	}
	if rec != nil {
		if err := o.ask(ctx, n.ConfigPath, "second PC",
			func(c *controlapi.Client) error { _, err := c.RecordRemote(ctx, *rec); return err },
			func(b *backend.Backend) error { _, err := b.RecordRemote(ctx, *rec); return err }); err != nil {
			return err
		}
	}
	p := controlapi.SettingsPatch{Notifications: n.Notifications, FallbackCPU: n.FallbackCPU}
	if p.Notifications == nil && p.FallbackCPU == nil {
		return nil
	}
	return o.ask(ctx, n.ConfigPath, "settings",
		func(c *controlapi.Client) error { _, err := c.PatchSettings(ctx, p); return err },
		func(b *backend.Backend) error { _, err := b.PatchSettings(ctx, p); return err })
}

// ask has the owner make a settings change: the service's API when it
// runs (its refusal's message as the error), else the backend here.
func (o owner) ask(ctx context.Context, path, what string, api func(*controlapi.Client) error, local func(*backend.Backend) error) error {
	if c := o.service(ctx); c != nil {
		err := api(c)
		var se *controlapi.StatusError
		if errors.As(err, &se) {
			return errors.New(se.Message)
		}
		return err
	}
	onLocalWrite(what)
	return local(o.local(path))
}

// removeSettings deletes the settings file through the backend, under its
// cross-process lock (the rollback of a first setup, which removes the
// service it installed as well: there is no API for deleting its settings).
func (o owner) removeSettings(ctx context.Context) error {
	return backend.New(backend.Options{SettingsPath: o.SettingsPath}).RemoveSettings(ctx)
}

// current is where pictures are read now with the config at path.
func (o owner) current(path string) (settings.Placement, error) {
	c, err := strataconfig.Read(path)
	if err != nil {
		return "", err
	}
	s, err := settings.Load(o.SettingsPath)
	if err != nil {
		return "", err
	}
	return backend.Placement(c, s), nil
}

// restore puts backup back over path through the owner.
func (o owner) restore(path, backup string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	no := false
	_, err := o.setVision(ctx, path, controlapi.VisionRequest{Placement: "restore", Backup: backup, Restart: &no})
	if err != nil {
		return fmt.Errorf("putting back %s: %w", backup, err)
	}
	return nil
}

func endpoint(r *settings.Remote) string {
	out := r.Host
	if r.User != "" {
		out = r.User + "@" + out
	}
	if r.Port != 0 {
		out += ":" + strconv.Itoa(r.Port)
	}
	return out
}
