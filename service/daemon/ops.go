package daemon

// Operations that stop Strata (a switch, an update, a repair) run one at a
// time and belong to their caller: one asked while another runs is
// answered at once with what runs and since when, never queued to run
// later when nobody waits for it any more.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/pathcmp"
)

// opRunning is the operation under way (guarded by d.mu).
type opRunning struct {
	what  string
	since time.Time
}

// beginOp takes switchMu for what, or answers 409 at once naming the
// operation that holds it. done releases it.
func (d *Daemon) beginOp(what string) (done func(), err error) {
	if !d.switchMu.TryLock() {
		d.mu.Lock()
		op := d.op
		d.mu.Unlock()
		msg := "another change of Strata is running"
		if op != nil {
			msg = fmt.Sprintf("%s is running since %s", op.what, op.since.Format("15:04"))
		}
		return nil, controlapi.Conflict(fmt.Errorf("%s: nothing was done; ask again when it is done (strata-service status shows it)", msg))
	}
	d.mu.Lock()
	d.op = &opRunning{what: what, since: time.Now()}
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.op = nil
		d.mu.Unlock()
		d.switchMu.Unlock()
	}, nil
}

// waitStart waits (up to bound) for the server started after event seq to
// get ready or fail; it returns the engine it runs.
func (d *Daemon) waitStart(ctx context.Context, seq uint64, bound time.Duration) (version string, ready bool, why string) {
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		evs, _, err := d.bus.Wait(wctx, seq)
		if err != nil {
			return "", false, "it did not get ready within " + bound.Round(time.Second).String()
		}
		for _, e := range evs {
			seq = e.Seq
			switch e.Kind {
			case events.ServerReady:
				return events.Get[events.ServerReadyDetails](e).Version, true, ""
			case events.ServerFailed, events.ServerForeign:
				return "", false, e.Message
			}
		}
	}
}

// startRecord is this install's last good start (strata-start.json in the
// state folder): how long Strata took from starting to ready.
type startRecord struct {
	Seconds float64   `json:"seconds"`
	Config  string    `json:"config"`
	At      time.Time `json:"at"`
}

func startRecordFile() string {
	return filepath.Join(locations.Path(locations.StateDir), "strata-start.json")
}

// lastStart is the last good start's duration (0 when none is recorded).
func lastStart() time.Duration {
	var rec startRecord
	b, err := os.ReadFile(startRecordFile())
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Seconds <= 0 {
		return 0
	}
	return time.Duration(rec.Seconds * float64(time.Second))
}

// recordStart keeps how long a start took that got ready.
func (d *Daemon) recordStart(config string, took time.Duration) {
	b, _ := json.Marshal(startRecord{Seconds: took.Seconds(), Config: config, At: time.Now().UTC()})
	if err := os.WriteFile(startRecordFile(), b, 0o644); err != nil {
		d.logf("recording the start time: %v", err)
	}
}

// startBound is how long a switch or an update waits for Strata to get
// ready before it brings back what ran before: three times this install's
// last good start plus 30 s (a new engine may load more), at most the
// supervisor's start timeout (10 minutes by default, the bound when no
// start was recorded yet).
func (d *Daemon) startBound() time.Duration {
	most := d.o.StartTimeout
	if most == 0 {
		most = 10 * time.Minute
	}
	last := lastStart()
	if last == 0 {
		return most
	}
	return boundFrom(last, most)
}

func boundFrom(last, most time.Duration) time.Duration {
	return min(3*last+30*time.Second, most)
}

// sameFile says whether a and b name one file, as pathcmp compares them
// ("" matches nothing).
func sameFile(a, b string) bool { return a != "" && b != "" && pathcmp.Same(a, b) }
