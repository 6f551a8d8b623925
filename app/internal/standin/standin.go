// Package standin is a stand-in for strata-service's control API, for the
// tray's tests: the real service needs a Strata install and a GPU. It speaks
// the contract of internal/controlapi (bearer token, GET /v1/state, the
// /v1/events long-poll with since/next/gap numbered by a real events.Bus,
// POST /v1/vision, /v1/settings and /v1/server/*, GET /v1/logs) and records what clients
// posted.
package standin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// Token is the bearer token the stand-in accepts.
const Token = "standin-token-0123456789"

// Request is one POST a client made.
type Request struct {
	Path     string
	Vision   *controlapi.VisionRequest
	Settings *controlapi.SettingsPatch
	Config   *controlapi.ConfigRequest
}

// API is the running stand-in.
type API struct {
	srv *httptest.Server // replaced by Start: read under mu
	Bus *events.Bus

	mu           sync.Mutex
	done         chan struct{} // closed by Stop: ends the long polls
	state        controlapi.State
	posts        []Request
	polls        int
	LogFile      string
	onVision     func(req controlapi.VisionRequest)
	rejectVision string
	noRestart    bool
	capacity     int
	configs      *controlapi.ConfigList
}

// SetConfigs sets what GET /v1/configs answers; POST /v1/config then
// switches among them as the service does: the named one runs, the state
// names it, and config.switched and server.restarting are published.
func (a *API) SetConfigs(l controlapi.ConfigList) {
	a.mu.Lock()
	a.configs = &l
	a.mu.Unlock()
}

// New starts a stand-in with state st on loopback; it stops when t ends.
func New(t testing.TB, st controlapi.State) *API {
	t.Helper()
	return NewCap(t, st, 1000)
}

// NewCap is New with an event bus that keeps only capacity events (to make
// gaps).
func NewCap(t testing.TB, st controlapi.State, capacity int) *API {
	t.Helper()
	a := &API{state: st, capacity: capacity}
	a.Start()
	t.Cleanup(a.Stop)
	return a
}

// Start (re)starts the API on a new port with a new event bus numbering from
// 1, as a restarted service does. The state is kept (Seq reset).
func (a *API) Start() {
	a.mu.Lock()
	a.Bus = events.NewBus(a.capacity)
	a.state.Seq = 0
	a.done = make(chan struct{})
	a.mu.Unlock()
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	a.mu.Lock()
	a.srv = srv
	a.mu.Unlock()
}

// Stop ends the API (as a stopped service): pending long polls end and
// connections are refused until Start.
func (a *API) Stop() {
	a.mu.Lock()
	if a.done != nil {
		close(a.done)
		a.done = nil
	}
	srv := a.srv
	a.mu.Unlock()
	srv.CloseClientConnections()
	srv.Close()
}

// URL is http://host:port of the running instance.
func (a *API) URL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.srv.URL
}

// Addr is host:port.
func (a *API) Addr() string { return strings.TrimPrefix(a.URL(), "http://") }

// Client is a controlapi client for the stand-in.
func (a *API) Client() *controlapi.Client {
	return &controlapi.Client{BaseURL: a.URL(), Token: Token, HTTP: &http.Client{}}
}

// WriteHome writes the address and token files a running service leaves in
// home/state (the layout internal/locations uses under STRATA_COMPANION_HOME).
func (a *API) WriteHome(t testing.TB, home string) {
	t.Helper()
	WriteAddr(t, home, a.Addr())
}

// WriteAddr writes home/state/control-addr and control-token.
func WriteAddr(t testing.TB, home, addr string) {
	t.Helper()
	dir := filepath.Join(home, "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "control-addr"), []byte(addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "control-token"), []byte(Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Change edits the state and publishes evs (stamped by the bus); the state's
// Seq becomes the last event's number, as the real service keeps it.
func (a *API) Change(edit func(*controlapi.State), evs ...events.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if edit != nil {
		edit(&a.state)
	}
	for _, e := range evs {
		a.Bus.Publish(e)
	}
	a.state.Seq = a.Bus.Last()
}

// OnVision sets f to run after a POST /v1/vision is recorded and answered
// (to play the restart that follows).
func (a *API) OnVision(f func(req controlapi.VisionRequest)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onVision = f
}

// RejectVision makes POST /v1/vision answer 400 with reason ("" accepts again).
func (a *API) RejectVision(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejectVision = reason
}

// VisionWithoutRestart makes POST /v1/vision (and its dry run) say the
// switch needs no restart (a move among the second PC, the CPU and off);
// by default a switch restarts Strata.
func (a *API) VisionWithoutRestart(no bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.noRestart = no
}

// State returns a copy of the current state.
func (a *API) State() controlapi.State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state
}

// Posts returns the POSTs received so far.
func (a *API) Posts() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.posts...)
}

// Polls counts /v1/events requests (a client that follows shows up here).
func (a *API) Polls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.polls
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+Token {
		writeJSON(w, http.StatusUnauthorized, controlapi.Error{Error: "a valid token is required"})
		return
	}
	// The real API is loopback-only; so is this.
	if host, _, _ := net.SplitHostPort(r.RemoteAddr); host != "127.0.0.1" && host != "::1" {
		writeJSON(w, http.StatusForbidden, controlapi.Error{Error: "loopback only"})
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/state":
		writeJSON(w, http.StatusOK, a.State())
	case r.Method == http.MethodGet && r.URL.Path == "/v1/events":
		a.events(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/vision":
		var req controlapi.VisionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: "bad JSON: " + err.Error()})
			return
		}
		switch req.Placement {
		case "gpu", "cpu", "remote", "off":
		default:
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: "placement must be gpu, cpu, remote or off"})
			return
		}
		a.mu.Lock()
		a.posts = append(a.posts, Request{Path: r.URL.Path, Vision: &req})
		hook, reject, restart := a.onVision, a.rejectVision, !a.noRestart
		a.mu.Unlock()
		if reject != "" {
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: reject})
			return
		}
		writeJSON(w, http.StatusOK, controlapi.VisionResponse{Diff: "-  \"vision\": ...\n+  \"vision\": ...", Written: !req.DryRun && restart,
			Restarted: !req.DryRun && restart, RestartNeeded: restart, SettingsChanged: !req.DryRun && !restart, Placement: req.Placement})
		if hook != nil && !req.DryRun {
			go hook(req)
		}
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/server/"):
		action := strings.TrimPrefix(r.URL.Path, "/v1/server/")
		if action != "start" && action != "stop" && action != "restart" {
			writeJSON(w, http.StatusNotFound, controlapi.Error{Error: "unknown action " + action})
			return
		}
		a.mu.Lock()
		a.posts = append(a.posts, Request{Path: r.URL.Path})
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, struct{}{})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/settings":
		var p controlapi.SettingsPatch
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: "bad JSON: " + err.Error()})
			return
		}
		a.mu.Lock()
		a.posts = append(a.posts, Request{Path: r.URL.Path, Settings: &p})
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, a.State())
	case r.Method == http.MethodGet && r.URL.Path == "/v1/configs":
		a.mu.Lock()
		l := a.configs
		a.mu.Unlock()
		if l == nil {
			writeJSON(w, http.StatusNotImplemented, controlapi.Error{Error: "no configs in this stand-in"})
			return
		}
		writeJSON(w, http.StatusOK, l)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/config":
		var req controlapi.ConfigRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: "bad JSON: " + err.Error()})
			return
		}
		a.mu.Lock()
		a.posts = append(a.posts, Request{Path: r.URL.Path, Config: &req})
		l := a.configs
		var prev, next string
		if l != nil {
			prev = l.Running
			if req.IfRunning != "" && req.IfRunning != prev {
				a.mu.Unlock()
				writeJSON(w, http.StatusConflict, controlapi.Error{Error: "the service runs " + prev + ", not " + req.IfRunning})
				return
			}
			for i := range l.Configs {
				e := &l.Configs[i]
				e.Running = e.Path == req.Config || e.Tag == req.Config
				if e.Running {
					next = e.Path
				}
			}
			if next == "" {
				for i := range l.Configs {
					l.Configs[i].Running = l.Configs[i].Path == prev
				}
			} else {
				l.Running = next
			}
		}
		a.mu.Unlock()
		if next == "" {
			writeJSON(w, http.StatusBadRequest, controlapi.Error{Error: "no such config: " + req.Config})
			return
		}
		writeJSON(w, http.StatusOK, controlapi.ConfigResponse{Previous: prev, Running: next, Message: "switched"})
		a.Change(func(s *controlapi.State) {
			s.Config.Path = next
			s.Server.Phase, s.Server.Since = controlapi.PhaseRestarting, time.Now()
		}, events.Event{Kind: events.ConfigSwitched, Details: map[string]any{"previous": prev, "running": next}}, events.Event{Kind: events.ServerRestarting})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/logs":
		writeJSON(w, http.StatusOK, controlapi.LogsResponse{File: a.LogFile, Lines: []string{}})
	default:
		writeJSON(w, http.StatusNotFound, controlapi.Error{Error: "no such endpoint"})
	}
}

func (a *API) events(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.polls++
	a.mu.Unlock()
	since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	waitS, _ := strconv.Atoi(r.URL.Query().Get("wait"))
	if waitS > 60 {
		waitS = 60
	}
	a.mu.Lock()
	bus, done := a.Bus, a.done
	a.mu.Unlock()
	evs, gap := bus.Since(since)
	if len(evs) == 0 && waitS > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(waitS)*time.Second)
		go func() {
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
		evs, gap, _ = bus.Wait(ctx, since)
		cancel()
	}
	next := since
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	if evs == nil {
		evs = []events.Event{}
	}
	writeJSON(w, http.StatusOK, controlapi.EventsResponse{Events: evs, Next: next, Gap: gap})
}
