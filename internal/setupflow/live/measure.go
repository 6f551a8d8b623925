package live

import (
	"context"
	"fmt"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// Measurer reads trial pictures with internal/measure: the encoder as the
// product starts it, the settings as they are on disk (the paired second
// PC), this PC's GPUs from a fresh probe (a GPU's free VRAM changes), and
// whether Strata runs from the service.
type Measurer struct {
	SettingsPath string
	RelayExe     string
	Prober       *Prober
	// Service tells whether Strata runs (nil: assumed not).
	Service *Service
}

func (m *Measurer) Measure(ctx context.Context, p settings.Placement, in setupflow.Install, configPath string, remote *settings.Remote, progress func(setupflow.TrialProgress)) (*setupflow.Trial, error) {
	st, err := settings.Load(m.SettingsPath)
	if err != nil {
		return nil, err
	}
	if remote != nil { // paired and prepared in this run, not yet applied
		st.Remote = remote
	}
	inp := measure.Inputs{Settings: st, RelayExe: m.RelayExe}
	if configPath != "" {
		c, err := strataconfig.Read(configPath)
		if err != nil {
			return nil, err
		}
		inp.Config = c
	}
	var plan func(measure.Inputs) (*measure.Trial, error)
	switch p {
	case settings.PlacementCPU:
		plan = measure.CPU
	case settings.PlacementGPU:
		plan = measure.GPU
		var o probe.Options
		if m.Prober != nil {
			o = m.Prober.Options
		}
		inp.GPUs = probe.Probe(ctx, o).GPUs
		if m.Service != nil {
			if s, err := m.Service.Status(ctx); err == nil && s.Running && s.ServerPhase != "" && s.ServerPhase != controlapi.PhaseStopped {
				inp.StrataRunning = true
			}
		}
	case settings.PlacementRemote:
		plan = measure.Remote
	default:
		return nil, fmt.Errorf("there is nothing to measure for %q", p)
	}
	tr, err := plan(inp)
	if err != nil {
		return nil, err
	}
	res, err := measure.Run(ctx, tr, func(pr measure.Progress) {
		progress(setupflow.TrialProgress{Phase: string(pr.Phase), Elapsed: pr.Elapsed, Bound: pr.Bound})
	})
	if err != nil {
		return nil, err
	}
	return &setupflow.Trial{Measurement: res.Record(), Note: res.Note}, nil
}
