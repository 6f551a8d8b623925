package daemon

// Operations that stop Strata (a switch, an update, a repair) run one at a
// time and belong to their caller: one asked while another runs is
// answered at once with what runs and since when, never queued to run
// later when nobody waits for it any more.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/strata-companion/companion/service/controlserver"
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
		return nil, &controlserver.RequestError{Code: http.StatusConflict,
			Err: fmt.Errorf("%s: nothing was done; ask again when it is done (strata-service status shows it)", msg)}
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
