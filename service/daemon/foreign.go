package daemon

// A Strata the service did not start (Strata's own console, its model
// switcher) on the server's port is named, with its pid and command line,
// and the service waits for the port instead of starting into it (which
// would exit at once on the busy port, again and again).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/portowner"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// port is the port the server of in runs on.
func (d *Daemon) port(in *stratainstall.Install) int {
	if d.o.Port > 0 {
		return d.o.Port
	}
	c, err := strataconfig.Read(in.ConfigInUse)
	if err != nil {
		return 8080
	}
	return c.Port()
}

// foreignOnPort names what listens on in's port when it is not a server
// this service started (its pid file), nil when the port is free.
func (d *Daemon) foreignOnPort(in *stratainstall.Install) *controlapi.ForeignServer {
	port := d.port(in)
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return nil
	}
	conn.Close()
	f := &controlapi.ForeignServer{Port: port}
	if o, ok := portowner.Find(port); ok {
		f.PID, f.Cmdline = o.PID, o.Cmdline
	}
	// A server an earlier run of this service left behind is the
	// supervisor's to end (it knows it by its pid file and mark).
	if rec, err := os.ReadFile(filepath.Join(locations.Path(locations.StateDir), "strata-server.pid")); err == nil && f.PID > 0 {
		var r struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(rec, &r) == nil && r.PID == f.PID {
			return nil
		}
	}
	return f
}

// foreignPromise is the foreign-port notice's promise, which a switch that
// brings the previous model back instead leaves out of its answer.
const foreignPromise = "; the service starts its own Strata once that one ends"

// isStrata says whether the server on port answers as Strata does (/health
// with its model and context).
func isStrata(port int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/health", nil)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h map[string]any
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return false
	}
	_, ctxOK := h["max_context"]
	return h["service"] == "strata" || ctxOK
}

// watchForeign publishes who holds r's port, then looks again every
// ForeignEvery and starts r's server once the port is free. One watch per
// running config at a time.
func (d *Daemon) watchForeign(r *running) {
	if !r.watching.CompareAndSwap(false, true) {
		return
	}
	defer r.watching.Store(false)
	f := d.foreignOnPort(r.in)
	if f == nil {
		if r.foreign {
			r.foreign = false
			r.sup.Start(r.ctx)
		}
		return
	}
	what := "another program"
	if acct := otherAccount(r, f.Port); acct != "" {
		// Another account's: never called Strata's own window, whatever
		// it answers (issue 32: clients would trust it with the api_key).
		what = "a program of another account, " + acct
	} else if isStrata(f.Port) {
		what = "a Strata server the service did not start (Strata's own window, START-HERE or START-Models)"
	}
	who := ""
	if f.PID > 0 {
		who = fmt.Sprintf(" (process %d: %s)", f.PID, f.Cmdline)
	}
	d.publish(events.New(fmt.Sprintf("port %d is held by %s%s%s: close it, or end process %d", f.Port, what, who, foreignPromise, f.PID),
		events.ServerForeignDetails{Port: f.Port, PID: f.PID, Cmdline: f.Cmdline}))
	t := time.NewTicker(d.o.ForeignEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		if d.foreignOnPort(r.in) == nil {
			r.foreign = false
			d.logf("port %d is free again: starting Strata", f.Port)
			r.sup.Start(r.ctx)
			return
		}
	}
}

// otherAccount names the account of the listener on port when it is
// neither the one that runs r's Strata (nor its install's owner) nor root;
// "" otherwise, or when the OS does not say.
func otherAccount(r *running, port int) string {
	o, ok := portowner.Find(port)
	if !ok || o.UID < 0 || o.UID == 0 {
		return ""
	}
	mine := os.Geteuid()
	owner, server := accountsOf(r)
	for _, a := range []*account.Account{owner, server} {
		if a != nil && a.SID == "" && int(a.UID) == o.UID {
			return ""
		}
	}
	if o.UID == mine {
		return ""
	}
	return o.Account()
}
