package setupflow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-companion/companion/internal/settings"
)

// ChoiceStep is where pictures are read: this PC's probe (the This PC
// page), the recommendation made from it and from the second PC's probe,
// and the placement chosen (the Pictures page).
type ChoiceStep struct {
	prober Prober
	gate   gate
	// changed tells the flow the choice changed (the Review is stale).
	changed func()
	// trials are the trials shown (MeasureStep.shown; nil: none), whose
	// figures replace the estimates in Recommendation.
	trials func() map[settings.Placement]*Trial

	mu      sync.Mutex
	machine *Machine
	// remote is the second PC's last probe (nil: none), which the
	// recommendation weighs; the second-PC step hands it in.
	remote *RemoteReport
	rec    Recommendation
	choice VisionChoice
}

func newChoiceStep(g gate, prober Prober, changed func()) *ChoiceStep {
	return &ChoiceStep{prober: prober, gate: g, changed: changed}
}

// resume sets the placement a machine was set up with (or the one the
// start page implies), before any probe.
func (s *ChoiceStep) resume(p settings.Placement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.choice.Placement = p
}

// Probe probes this PC and computes the recommendation. A failed probe
// is kept as a warning: CPU and off stay possible.
func (s *ChoiceStep) Probe(ctx context.Context, progress func(Progress)) (*Machine, error) {
	ctx, end, err := s.gate.begin(ctx, "probe this PC", PageThisPC, PagePlacement)
	if err != nil {
		return nil, err
	}
	defer end()
	m, err := s.prober.Probe(ctx, orNop(progress))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if m == nil {
		m = &Machine{}
	}
	if err != nil {
		m.Warnings = append(m.Warnings, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.machine = m
	s.rec = s.prober.Recommend(m, s.remote)
	// Preselect the recommendation, unless a placement is already chosen
	// (the current setting on a configured machine, or the user's pick).
	if !s.choice.Placement.Valid() {
		s.choice.Placement, s.choice.Device = s.rec.Best, s.rec.BestDevice
	}
	return m, err
}

// secondPCProbed takes the second PC's probe into the recommendation (once
// this PC is probed) and gives r the picture time it estimates there.
func (s *ChoiceStep) secondPCProbed(r *RemoteReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remote = r
	if s.machine == nil {
		return
	}
	s.rec = s.prober.Recommend(s.machine, r)
	if o, ok := s.rec.Option(settings.PlacementRemote); ok && o.PictureSeconds > 0 {
		r.PictureSeconds = o.PictureSeconds
	}
}

// secondPCForgotten drops the second PC's probe (another PC was named);
// the recommendation stays until the next probe.
func (s *ChoiceStep) secondPCForgotten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remote = nil
}

// Machine is the probe's result (nil before Probe).
func (s *ChoiceStep) Machine() *Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.machine
}

// Recommendation is every placement with its figures: once a place was
// measured (this run, or a trial kept in the settings), its option carries
// the measured figure (Option.Measured) and the reason quotes it where the
// prober can (MeasuredProber); the choice stays the estimate's
// (MeasureStep.Advice says what the figures alone suggest).
func (s *ChoiceStep) Recommendation() Recommendation {
	s.mu.Lock()
	est, machine, remote := s.rec, s.machine, s.remote
	s.mu.Unlock()
	var trials map[settings.Placement]*Trial
	if s.trials != nil {
		trials = s.trials()
	}
	rec := est
	if mp, ok := s.prober.(MeasuredProber); ok && machine != nil && len(trials) > 0 {
		ms := &settings.Settings{}
		for p, t := range trials {
			ms.SetMeasured(p, t.Measurement)
		}
		rec = mp.RecommendMeasured(machine, remote, ms.Measured)
		rec.Best, rec.BestDevice = est.Best, est.BestDevice
	}
	rec.Options = append([]Option(nil), rec.Options...)
	for i, o := range rec.Options {
		// A spare GPU picked by its index has no trial of its own: the
		// GPU trial reads on the GPU Strata would use.
		if t := trials[o.Placement]; t != nil && o.Device == nil && o.Available {
			m := t.Measurement
			rec.Options[i].Measured = &m
		}
	}
	return rec
}

// estimate is the recommendation from the estimates alone.
func (s *ChoiceStep) estimate() Recommendation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// option is the estimate's option for p (zero when it has none).
func (s *ChoiceStep) option(p settings.Placement) Option {
	o, _ := s.estimate().Option(p)
	return o
}

// Choose sets where pictures are read (device: another GPU, nil for the first).
func (s *ChoiceStep) Choose(p settings.Placement, device *int) error {
	if !p.Valid() {
		return fmt.Errorf("%q is not a placement (gpu, cpu, remote, off)", p)
	}
	s.mu.Lock()
	if o, ok := s.rec.Option(p); ok && !o.Available && p != settings.PlacementRemote {
		s.mu.Unlock()
		return fmt.Errorf("%s is not possible on this PC: %s", o.Label, o.Why)
	}
	s.choice.Placement, s.choice.Device = p, device
	s.mu.Unlock()
	s.changed()
	return nil
}

// Current is the current vision choice (its Host is the flow's to fill).
func (s *ChoiceStep) Current() VisionChoice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.choice
}

// probed says what the This PC page still lacks (nil: nothing).
func (s *ChoiceStep) probed() error {
	if s.Machine() == nil {
		return errors.New("wait for the probe of this PC to finish")
	}
	return nil
}

// chosen says what the Pictures page still lacks (nil: nothing).
func (s *ChoiceStep) chosen() error {
	if !s.Current().Placement.Valid() {
		return errors.New("choose where pictures should be read")
	}
	return nil
}
