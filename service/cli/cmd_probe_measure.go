package cli

// `strata-service probe --measure [--json]`: a trial picture on each place
// pictures could be read (this PC's CPU, this PC's GPU when it fits, the
// paired second PC), its figures in place of the estimates, a recommendation
// from them, and the figures kept in the companion settings (through the
// service when it runs, else the in-process backend) so that `status` and
// the tray can say "last measured". The work is internal/measure's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// measuredJSON is one candidate in `probe --measure --json`.
type measuredJSON struct {
	Placement settings.Placement `json:"placement"`
	// Measured: a trial ran and answered (Result); otherwise Kind and
	// Error say why not (measure.Kind values).
	Measured bool            `json:"measured"`
	Result   *measure.Result `json:"result,omitempty"`
	Kind     measure.Kind    `json:"kind,omitempty"`
	Error    string          `json:"error,omitempty"`
	// Estimate is the probe's figure for the same place (0: none).
	EstimateSeconds float64 `json:"estimate_seconds,omitempty"`
}

// measureOutput is `probe --measure --json`: the probe's output plus the
// trials and the recommendation from them.
type measureOutput struct {
	probeOutput
	Measured []measuredJSON `json:"measured"`
	// Measurement is the recommendation from the measured figures.
	Measurement struct {
		Placement settings.Placement `json:"placement"`
		Reason    string             `json:"reason"`
		Changed   bool               `json:"changed"`
	} `json:"measurement"`
	// Recorded says the figures were kept in the companion settings;
	// RecordError why not.
	Recorded    bool   `json:"recorded"`
	RecordError string `json:"record_error,omitempty"`
}

func runMeasure(ctx context.Context, env *cliEnv, r *probe.Report, rec probe.Recommendation, bound time.Duration, asJSON bool) error {
	s, err := settings.LoadDefault()
	if err != nil {
		return err
	}
	in := measure.Inputs{Settings: s, GPUs: r.GPUs, Bound: bound, StrataRunning: strataRunning(ctx)}
	if inst, err := resolveStrata(ctx, env, s); err == nil && inst.ConfigInUse != "" {
		if c, err := strataconfig.Read(inst.ConfigInUse); err == nil {
			in.Config = c
		}
	}
	estimate := func(p settings.Placement) float64 {
		for _, e := range rec.Estimates {
			if e.Placement != p || !e.Available || (p == settings.PlacementGPU && e.Device != nil) {
				continue
			}
			return e.PictureSeconds
		}
		return 0
	}
	type cand struct {
		p    settings.Placement
		plan func(measure.Inputs) (*measure.Trial, error)
	}
	cands := []cand{{settings.PlacementCPU, measure.CPU}, {settings.PlacementGPU, measure.GPU}}
	if s.Remote != nil && s.Remote.Host != "" {
		cands = append(cands, cand{settings.PlacementRemote, measure.Remote})
	}
	out := measureOutput{probeOutput: probeOutput{Schema: probeJSONSchema, Report: r, Recommendation: rec}, Measured: []measuredJSON{}}
	var outs []measure.Outcome
	say := func(format string, a ...any) {
		if !asJSON {
			fmt.Fprintf(env.stdout, format+"\n", a...)
		}
	}
	say("Trial pictures (one 1024x1024 picture, as Strata would read it; at most %s each)", durWords(boundOr(bound)))
	for _, c := range cands {
		m := measuredJSON{Placement: c.p, EstimateSeconds: estimate(c.p)}
		tr, err := c.plan(in)
		var res *measure.Result
		if err == nil {
			res, err = measure.Run(ctx, tr, progressPrinter(env.stderr, c.p, asJSON))
		}
		if err != nil {
			m.Kind, m.Error = measure.KindOf(err), err.Error()
			say("  %-14s not measured: %s", c.p.Name("")+":", err)
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
		} else {
			m.Measured, m.Result = true, res
			// The measured figure replaces the estimate (which the JSON
			// keeps as estimate_seconds): it is not said beside it.
			say("  %-14s measured here: %s per picture, start %s (%s)", c.p.Name("")+":", settings.Secs(res.PictureSeconds), settings.Secs(res.StartSeconds), res.Device)
			if res.Note != "" {
				say("                 note: %s", res.Note)
			}
		}
		outs = append(outs, measure.Outcome{Placement: c.p, Result: res, Err: err})
		out.Measured = append(out.Measured, m)
	}
	best, why, changed := measure.Choose(rec.Placement, outs)
	out.Measurement.Placement, out.Measurement.Reason, out.Measurement.Changed = best, why, changed
	if why != "" {
		say("")
		say("Recommendation from these figures: read pictures %s", best.Words(""))
		say("  %s", why)
	}
	if err := recordMeasurements(ctx, outs); err != nil {
		out.RecordError = err.Error()
		say("The figures could not be kept in the companion settings: %v", err)
	} else {
		out.Recorded = true
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return nil
}

func boundOr(b time.Duration) time.Duration {
	if b <= 0 {
		return measure.DefaultBound
	}
	return b
}

func durWords(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.String()
}

// progressPrinter shows the elapsed time on a terminal's stderr line (none
// for --json, whose stdout is for the JSON alone).
func progressPrinter(w io.Writer, p settings.Placement, asJSON bool) func(measure.Progress) {
	f, ok := w.(*os.File)
	if asJSON || !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(pr measure.Progress) {
		what := "starting the encoder"
		if pr.Phase == measure.PhaseReading {
			what = "reading the picture"
		}
		fmt.Fprintf(w, "\r  %s: %s, %.1f s ", p.Name(""), what, pr.Elapsed.Seconds())
		if pr.Phase == measure.PhaseStopping {
			fmt.Fprint(w, "\r"+strings.Repeat(" ", 70)+"\r")
		}
	}
}

// strataRunning says whether Strata's server runs now, as the service sees
// it (a server the service did not start counts too).
func strataRunning(ctx context.Context) bool {
	c := openOwner(ctx)
	if !owner.IsService(c) {
		return false // no service: it runs no Strata
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.State(cctx)
	if err != nil {
		return false
	}
	return st.Server.Foreign != nil || (st.Server.Phase != "" && st.Server.Phase != controlapi.PhaseStopped)
}

// recordMeasurements keeps each measured figure through the settings' owner.
func recordMeasurements(ctx context.Context, outs []measure.Outcome) error {
	ow := openOwner(ctx)
	for _, o := range outs {
		if o.Result == nil {
			continue
		}
		p := controlapi.SettingsPatch{Measured: &controlapi.MeasuredRecord{Placement: o.Placement, Measurement: o.Result.Record()}}
		if _, err := ow.PatchSettings(ctx, p); err != nil {
			return controlapi.Words(err)
		}
	}
	return nil
}
