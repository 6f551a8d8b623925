package setupflow

// Trial pictures on the Pictures page: one standard 1024x1024 picture read
// where the encoder could run, measured (internal/measure through the
// Measurer), shown beside the estimates, recommended from, and kept in the
// companion settings at Apply.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/settings"
)

// Trial is one trial picture's figures (Measurement) and what the figures
// alone do not say (Note: "read on the CPU: no GPU figure").
type Trial struct {
	settings.Measurement
	Note string
}

// TrialProgress is a running trial: its phase ("starting", "reading") and
// time, against its bound.
type TrialProgress struct {
	Phase   string
	Elapsed time.Duration
	Bound   time.Duration
}

// Measurer reads one trial picture on placement p, with the Strata install
// and config the wizard chose; remote is the second PC paired and prepared
// in this run (nil: the one in the settings, if any), which the settings
// on disk hold only after Apply. A nil Measurer hides the Measure buttons.
type Measurer interface {
	Measure(ctx context.Context, p settings.Placement, in Install, configPath string, remote *settings.Remote, progress func(TrialProgress)) (*Trial, error)
}

// ErrNoMeasurer: this wizard cannot measure (no Measurer wired).
var ErrNoMeasurer = errors.New("this setup cannot read trial pictures")

// MeasureStep reads trial pictures where the encoder could run and keeps
// them (with their failures) for the Pictures page, the recommendation from
// measured figures and the settings Apply writes. It reads the install
// chosen, the second PC paired and prepared, and the recommendation's
// choice through small interfaces; prev are the settings read at start
// (their last kept trials).
type MeasureStep struct {
	measurer Measurer
	gate     gate
	install  chosenInstall
	pc       pairedPC
	rec      recommender
	prev     *settings.Settings

	mu     sync.Mutex
	trials map[settings.Placement]*Trial
	errs   map[settings.Placement]error
}

// pairedPC is the second PC as paired and prepared in this run or before
// (SecondPCStep.State).
type pairedPC interface {
	State() (r *settings.Remote, paired, prepared bool)
}

// recommender is the recommendation from the estimates (ChoiceStep).
type recommender interface {
	estimate() Recommendation
}

func newMeasureStep(g gate, m Measurer, install chosenInstall, pc pairedPC, rec recommender, prev *settings.Settings) *MeasureStep {
	return &MeasureStep{measurer: m, gate: g, install: install, pc: pc, rec: rec, prev: prev}
}

// Available says whether the Pictures page offers trials.
func (s *MeasureStep) Available() bool { return s.measurer != nil }

// Run reads one trial picture on p. The result (or the failure) is kept
// for the page; a result goes into the settings at Apply. Cancelling ctx
// stops the trial at once.
func (s *MeasureStep) Run(ctx context.Context, p settings.Placement, progress func(TrialProgress)) (*Trial, error) {
	if s.measurer == nil {
		return nil, ErrNoMeasurer
	}
	if !p.ReadsPictures() {
		return nil, fmt.Errorf("there is nothing to measure for %q", p)
	}
	ctx, end, err := s.gate.begin(ctx, "measure "+string(p), PagePlacement, PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	in, cfg, _ := s.install.Selected()
	rm, _, prepared := s.pc.State()
	if !prepared {
		rm = nil
	}
	if progress == nil {
		progress = func(TrialProgress) {}
	}
	t, err := s.measurer.Measure(ctx, p, in, cfg, rm, progress)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trials == nil {
		s.trials = map[settings.Placement]*Trial{}
		s.errs = map[settings.Placement]error{}
	}
	if err != nil {
		if measure.KindOf(err) != measure.KindCanceled && ctx.Err() == nil {
			s.errs[p] = err
		}
		return nil, err
	}
	delete(s.errs, p)
	s.trials[p] = t
	return t, nil
}

// Trials are the trials of this run (and the last kept ones from the
// settings, for places not measured now), and the failures of this run.
func (s *MeasureStep) Trials() (map[settings.Placement]*Trial, map[settings.Placement]error) {
	_, _, prepared := s.pc.State()
	out := s.shown()
	errs := map[settings.Placement]error{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, e := range s.errs {
		if p == settings.PlacementRemote && prepared {
			if k := measure.KindOf(e); k == measure.KindNotPaired || k == measure.KindNotPrepared {
				continue // said before this run paired and prepared it
			}
		}
		errs[p] = e
	}
	return out, errs
}

// shown are this run's trials and, for places not measured now, the last
// ones kept in the settings (never another second PC's than the one
// paired now).
func (s *MeasureStep) shown() map[settings.Placement]*Trial {
	r, _, _ := s.pc.State()
	out := map[settings.Placement]*Trial{}
	for _, p := range settings.Measurable() {
		m := s.prev.LastMeasured(p)
		if m == nil || p == settings.PlacementRemote && r != nil && m.Host != "" && m.Host != r.Host {
			continue // none, or another second PC's
		}
		out[p] = &Trial{Measurement: *m}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, t := range s.trials {
		out[p] = t
	}
	return out
}

// Advice is the recommendation from the measured figures (this run's, and
// the ones kept in the settings for places not measured now): where, why
// ("" when nothing was measured), and whether it differs from the
// estimate's.
func (s *MeasureStep) Advice() (settings.Placement, string, bool) {
	base := s.rec.estimate().Best
	var outs []measure.Outcome
	for p, t := range s.shown() {
		outs = append(outs, measure.Outcome{Placement: p, Result: &measure.Result{Placement: p, PictureSeconds: t.PictureS}})
	}
	s.mu.Lock()
	for p, e := range s.errs {
		outs = append(outs, measure.Outcome{Placement: p, Err: e})
	}
	s.mu.Unlock()
	return measure.Choose(base, outs)
}

// kept are this run's trials, which the settings keep at Apply.
func (s *MeasureStep) kept() map[settings.Placement]*Trial {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[settings.Placement]*Trial, len(s.trials))
	for p, t := range s.trials {
		out[p] = t
	}
	return out
}
