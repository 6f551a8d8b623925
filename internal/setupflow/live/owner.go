package live

// The wizard changes Strata's config and the companion's settings only by
// asking their owner (internal/backend), through internal/owner: the
// service's control API when the service runs (it does once Apply installed
// and started it), and only when no service answers (headless first setup,
// tests with a stand-in service) the same backend in this process, under
// the same cross-process lock. The CLI takes the same path.

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	own "github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
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

func (o owner) path() own.Owner {
	return own.Owner{SettingsPath: o.SettingsPath, RelayExe: o.RelayExe, NewClient: o.Client,
		VRAM: func(context.Context, string) int {
			if o.VRAM == nil {
				return 0
			}
			return o.VRAM()
		},
		OnLocal: func(what string) {
			if what != "" {
				onLocalWrite(what)
			}
		}}
}

// local is the same backend in this process, for the config at path (a
// read-only preview: nothing is written through it).
func (o owner) local(path string) *backend.Backend {
	p := o.path()
	p.OnLocal = nil
	return p.InProcess(path).Backend()
}

// setVision sends req to the owner and says what it did.
func (o owner) setVision(ctx context.Context, path string, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	return o.path().SetVision(ctx, path, req)
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

// saveSettings records n through the owner (internal/owner's whole-settings
// save, which names any field it could not set instead of dropping it).
func (o owner) saveSettings(ctx context.Context, n *settings.Settings) error {
	return o.path().SaveSettings(ctx, n)
}

// removeSettings deletes the settings file through the backend, under its
// cross-process lock (the rollback of a first setup, which removes the
// service it installed as well: there is no API for deleting its settings).
func (o owner) removeSettings(ctx context.Context) error {
	return o.path().InProcess("").Backend().RemoveSettings(ctx)
}

// current is where pictures are read now with the config at path.
func (o owner) current(path string) (settings.Placement, error) {
	return o.local(path).Placement()
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
