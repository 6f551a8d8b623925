// Package ownertest holds a controlapi.Owner made of funcs, for tests that
// play one part of the owner behind the real control API (the server's own
// tests, internal/testenv's stand-in service).
package ownertest

import (
	"context"
	"errors"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

// Funcs is a controlapi.Owner for tests that play one part of the
// owner behind the real control API: each method calls its func, and a nil
// func refuses as an owner without it does (501). The compiler holds it to
// the interface like the real owners, so a new owner method must be added
// here too.
type Funcs struct {
	StateF         func(ctx context.Context) (*controlapi.State, error)
	SetVisionF     func(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error)
	PatchSettingsF func(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error)
	RemoteF        func(ctx context.Context) (*settings.Remote, error)
	RecordRemoteF  func(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error)
	ConfigsF       func(ctx context.Context) (*controlapi.ConfigList, error)
	SwitchConfigF  func(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error)
	RepairConfigF  func(ctx context.Context, req controlapi.RepairRequest) (*controlapi.RepairResponse, error)
	UpdateStrataF  func(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error)
	LogsF          func(ctx context.Context, tail int) (*controlapi.LogsResponse, error)
	StartF         func(ctx context.Context) error
	StopF          func(ctx context.Context) error
	RestartF       func(ctx context.Context) error
	UnloadF        func(ctx context.Context) error
}

var _ controlapi.Owner = Funcs{}

func missing(what string) error {
	return controlapi.Unavailable(errors.New(what + " is not available in this test's service"))
}

func (o Funcs) State(ctx context.Context) (*controlapi.State, error) {
	if o.StateF == nil {
		return &controlapi.State{}, nil // every service has a state
	}
	return o.StateF(ctx)
}

func (o Funcs) SetVision(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	if o.SetVisionF == nil {
		return nil, missing("changing vision")
	}
	return o.SetVisionF(ctx, req)
}

func (o Funcs) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
	if o.PatchSettingsF == nil {
		return nil, missing("changing settings")
	}
	return o.PatchSettingsF(ctx, p)
}

func (o Funcs) Remote(ctx context.Context) (*settings.Remote, error) {
	if o.RemoteF == nil {
		return nil, missing("the second PC's record")
	}
	return o.RemoteF(ctx)
}

func (o Funcs) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	if o.RecordRemoteF == nil {
		return nil, missing("recording the second PC")
	}
	return o.RecordRemoteF(ctx, rec)
}

func (o Funcs) Configs(ctx context.Context) (*controlapi.ConfigList, error) {
	if o.ConfigsF == nil {
		return nil, missing("listing configs")
	}
	return o.ConfigsF(ctx)
}

func (o Funcs) SwitchConfig(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	if o.SwitchConfigF == nil {
		return nil, missing("switching the config")
	}
	return o.SwitchConfigF(ctx, req)
}

func (o Funcs) RepairConfig(ctx context.Context, req controlapi.RepairRequest) (*controlapi.RepairResponse, error) {
	if o.RepairConfigF == nil {
		return nil, missing("repairing the config")
	}
	return o.RepairConfigF(ctx, req)
}

func (o Funcs) UpdateStrata(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error) {
	if o.UpdateStrataF == nil {
		return nil, missing("updating Strata")
	}
	return o.UpdateStrataF(ctx, req)
}

func (o Funcs) Logs(ctx context.Context, tail int) (*controlapi.LogsResponse, error) {
	if o.LogsF == nil {
		return nil, missing("the server's log")
	}
	return o.LogsF(ctx, tail)
}

func (o Funcs) Start(ctx context.Context) error {
	if o.StartF == nil {
		return missing("starting the server")
	}
	return o.StartF(ctx)
}

func (o Funcs) Stop(ctx context.Context) error {
	if o.StopF == nil {
		return missing("stopping the server")
	}
	return o.StopF(ctx)
}

func (o Funcs) Unload(ctx context.Context) error {
	if o.UnloadF == nil {
		return missing("unloading the model")
	}
	return o.UnloadF(ctx)
}

func (o Funcs) Restart(ctx context.Context) error {
	if o.RestartF == nil {
		return missing("restarting the server")
	}
	return o.RestartF(ctx)
}
