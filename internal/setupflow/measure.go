package setupflow

// Trial pictures on the Pictures page: one standard 1024x1024 picture read
// where the encoder could run, measured (internal/measure through the
// Measurer), shown beside the estimates, recommended from, and kept in the
// companion settings at Apply.

import (
	"context"
	"errors"
	"fmt"
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

// CanMeasure says whether the Pictures page offers trials.
func (f *Flow) CanMeasure() bool { return f.d.Measurer != nil }

// Measure reads one trial picture on p. The result (or the failure) is
// kept for the page; a result goes into the settings at Apply. Cancelling
// ctx stops the trial at once.
func (f *Flow) Measure(ctx context.Context, p settings.Placement, progress func(TrialProgress)) (*Trial, error) {
	if f.d.Measurer == nil {
		return nil, ErrNoMeasurer
	}
	if !p.ReadsPictures() {
		return nil, fmt.Errorf("there is nothing to measure for %q", p)
	}
	ctx, end, err := f.begin(ctx, "measure "+string(p), PagePlacement, PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	f.mu.Lock()
	var in Install
	if f.install != nil {
		in = *f.install
	}
	cfg := f.configPath
	var rm *settings.Remote
	if f.remote != nil && f.prepared {
		c := *f.remote
		rm = &c
	}
	f.mu.Unlock()
	if progress == nil {
		progress = func(TrialProgress) {}
	}
	t, err := f.d.Measurer.Measure(ctx, p, in, cfg, rm, progress)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trials == nil {
		f.trials = map[settings.Placement]*Trial{}
		f.trialErrs = map[settings.Placement]error{}
	}
	if err != nil {
		if measure.KindOf(err) != measure.KindCanceled && ctx.Err() == nil {
			f.trialErrs[p] = err
		}
		return nil, err
	}
	delete(f.trialErrs, p)
	f.trials[p] = t
	return t, nil
}

// Trials are the trials of this run (and the last kept ones from the
// settings, for places not measured now), and the failures of this run.
func (f *Flow) Trials() (map[settings.Placement]*Trial, map[settings.Placement]error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.trialsLocked()
	errs := map[settings.Placement]error{}
	for p, e := range f.trialErrs {
		if p == settings.PlacementRemote && f.remote != nil && f.prepared {
			if k := measure.KindOf(e); k == measure.KindNotPaired || k == measure.KindNotPrepared {
				continue // said before this run paired and prepared it
			}
		}
		errs[p] = e
	}
	return out, errs
}

// trialsLocked are this run's trials and, for places not measured now, the
// last ones kept in the settings.
func (f *Flow) trialsLocked() map[settings.Placement]*Trial {
	out := map[settings.Placement]*Trial{}
	for _, p := range settings.Measurable() {
		m := f.prev.LastMeasured(p)
		if m == nil || p == settings.PlacementRemote && f.remote != nil && m.Host != "" && m.Host != f.remote.Host {
			continue // none, or another second PC's
		}
		out[p] = &Trial{Measurement: *m}
	}
	for p, t := range f.trials {
		out[p] = t
	}
	return out
}

// MeasuredAdvice is the recommendation from the measured figures (this
// run's, and the ones kept in the settings for places not measured now):
// where, why ("" when nothing was measured), and whether it differs from
// the estimate's.
func (f *Flow) MeasuredAdvice() (settings.Placement, string, bool) {
	f.mu.Lock()
	base := f.rec.Best
	var outs []measure.Outcome
	for p, t := range f.trialsLocked() {
		outs = append(outs, measure.Outcome{Placement: p, Result: &measure.Result{Placement: p, PictureSeconds: t.PictureS}})
	}
	for p, e := range f.trialErrs {
		outs = append(outs, measure.Outcome{Placement: p, Err: e})
	}
	f.mu.Unlock()
	return measure.Choose(base, outs)
}

// keepTrialsLocked puts this run's trials into n (the settings Apply writes).
func (f *Flow) keepTrialsLocked(n *settings.Settings) {
	if len(f.trials) == 0 {
		return
	}
	if n.Measured != nil { // n is a shallow copy of the settings read before
		m := *n.Measured
		n.Measured = &m
	}
	for p, t := range f.trials {
		n.SetMeasured(p, t.Measurement)
	}
}
