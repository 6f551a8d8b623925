package controltest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/service/controlserver"
)

// Service is strata-service as its clients (the tray) meet it, for their
// tests: the real control API (service/controlserver: its token, loopback
// and Host checks, routes and long poll) over a backend that plays the
// service: a state the test sets and changes, events on a real bus, and
// vision, settings and server requests recorded and answered in the
// service's words. Stop and Start play a service that stops and comes
// back (a new port, a new token, event numbers from 1).
type Service struct {
	t testing.TB

	mu           sync.Mutex
	bus          *events.Bus
	srv          *controlserver.Server
	addr         string
	stop         context.CancelFunc
	stopped      chan struct{}
	state        controlapi.State
	posts        []Post
	polls        int
	onVision     func(req controlapi.VisionRequest)
	rejectVision string
	noRestart    bool
	capacity     int
	configs      *controlapi.ConfigList
	// LogFile is the server log GET /v1/logs names.
	LogFile string
}

// Post is one POST a client made.
type Post struct {
	Path     string
	Vision   *controlapi.VisionRequest
	Settings *controlapi.SettingsPatch
	Config   *controlapi.ConfigRequest
}

// NewService serves st on loopback until t ends.
func NewService(t testing.TB, st controlapi.State) *Service {
	t.Helper()
	return NewServiceCap(t, st, 1000)
}

// NewServiceCap is NewService with a bus that keeps only capacity events
// (to make gaps).
func NewServiceCap(t testing.TB, st controlapi.State, capacity int) *Service {
	t.Helper()
	s := &Service{t: t, state: st, capacity: capacity}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start (re)starts the service's API on a new port, with a new token and a
// new bus numbering from 1, as a restarted service; the state is kept (its
// Seq reset).
func (s *Service) Start() {
	s.t.Helper()
	bus := events.NewBus(s.capacity)
	// A long poll that found nothing and waits: a client that follows.
	bus.SetBlockingHook(func() { s.mu.Lock(); s.polls++; s.mu.Unlock() })
	rec := func(path string) func(context.Context) error {
		return func(context.Context) error { s.record(Post{Path: path}); return nil }
	}
	srv, err := controlserver.New(controlserver.Backend{
		Bus: bus,
		Owner: ownertest.Funcs{
			StateF:         func(context.Context) (*controlapi.State, error) { st := s.State(); return &st, nil },
			StartF:         rec("/v1/server/start"),
			StopF:          rec("/v1/server/stop"),
			RestartF:       rec("/v1/server/restart"),
			UnloadF:        s.unload,
			SetVisionF:     s.vision,
			PatchSettingsF: s.settings,
			ConfigsF:       s.listConfigs,
			SwitchConfigF:  s.switchConfig,
			LogsF: func(context.Context, int) (*controlapi.LogsResponse, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				return &controlapi.LogsResponse{File: s.LogFile, Lines: []string{}}, nil
			},
		},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	l, err := controlserver.Listen("127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(stopped) }()
	s.mu.Lock()
	s.bus, s.srv, s.addr, s.stop, s.stopped = bus, srv, l.Addr().String(), cancel, stopped
	s.state.Seq = 0
	s.mu.Unlock()
}

// Stop ends the API, as a stopped service: long polls end and connections
// are refused until Start.
func (s *Service) Stop() {
	s.mu.Lock()
	stop, stopped := s.stop, s.stopped
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// Bus is the running instance's event bus.
func (s *Service) Bus() *events.Bus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bus
}

// Addr is host:port of the running instance.
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Token is the running instance's bearer token.
func (s *Service) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv.Token()
}

// Client is a control API client of the running instance.
func (s *Service) Client() *controlapi.Client {
	return &controlapi.Client{BaseURL: "http://" + s.Addr(), Token: s.Token(), HTTP: &http.Client{}}
}

// WriteHome writes the address and token files a running service leaves in
// home/state (internal/locations' layout under STRATA_COMPANION_HOME).
func (s *Service) WriteHome(t testing.TB, home string) {
	t.Helper()
	dir := filepath.Join(home, "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "control-addr"), []byte(s.Addr()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "control-token"), []byte(s.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Change edits the state and publishes evs; the state's Seq becomes the
// last event's number, as the service keeps it.
func (s *Service) Change(edit func(*controlapi.State), evs ...events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if edit != nil {
		edit(&s.state)
	}
	for _, e := range evs {
		s.bus.Publish(e)
	}
	s.state.Seq = s.bus.Last()
}

// OnVision sets f to run after a POST /v1/vision is recorded and answered
// (to play the restart that follows).
func (s *Service) OnVision(f func(req controlapi.VisionRequest)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onVision = f
}

// RejectVision makes POST /v1/vision answer 400 with reason ("" accepts).
func (s *Service) RejectVision(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectVision = reason
}

// VisionWithoutRestart makes a vision switch (and its dry run) one that
// needs no restart (among the second PC, the CPU and off); by default a
// switch restarts Strata.
func (s *Service) VisionWithoutRestart(no bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRestart = no
}

// SetConfigs sets what GET /v1/configs answers; POST /v1/config then
// switches among them as the service does: the named one runs, the state
// names it, and config.switched and server.restarting are published.
func (s *Service) SetConfigs(l controlapi.ConfigList) {
	s.mu.Lock()
	s.configs = &l
	s.mu.Unlock()
}

func (s *Service) listConfigs(context.Context) (*controlapi.ConfigList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configs == nil {
		return nil, controlapi.Unavailable(errors.New("no configs in this test's service"))
	}
	l := *s.configs
	l.Configs = append([]controlapi.ConfigEntry(nil), s.configs.Configs...)
	return &l, nil
}

func (s *Service) switchConfig(_ context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	s.mu.Lock()
	s.posts = append(s.posts, Post{Path: "/v1/config", Config: &req})
	l := s.configs
	var prev, next string
	if l != nil {
		prev = l.Running
		if req.IfRunning != "" && req.IfRunning != prev {
			s.mu.Unlock()
			return nil, controlapi.Conflict(errors.New("the service runs " + prev + ", not " + req.IfRunning))
		}
		for _, e := range l.Configs {
			if e.Path == req.Config || e.Tag == req.Config {
				next = e.Path
			}
		}
		if next != "" && !req.DryRun {
			for i := range l.Configs {
				l.Configs[i].Running = l.Configs[i].Path == next
			}
			l.Running = next
		}
	}
	s.mu.Unlock()
	if next == "" {
		return nil, controlapi.BadRequest(errors.New("no such config: " + req.Config))
	}
	if !req.DryRun {
		s.Change(func(st *controlapi.State) {
			st.Config.Path = next
			st.Server.Phase, st.Server.Since = controlapi.PhaseRestarting, time.Now()
		}, events.New("", events.ConfigSwitchedDetails{Previous: prev, Running: next}), events.Event{Kind: events.ServerRestarting})
	}
	return &controlapi.ConfigResponse{Previous: prev, Running: next, Message: "switched"}, nil
}

// State is a copy of the current state.
func (s *Service) State() controlapi.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Posts are the POSTs received so far.
func (s *Service) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Polls counts the long polls that waited for an event.
func (s *Service) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

func (s *Service) record(p Post) {
	s.mu.Lock()
	s.posts = append(s.posts, p)
	s.mu.Unlock()
}

func (s *Service) vision(_ context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	switch req.Placement {
	case "gpu", "cpu", "remote", "off":
	default:
		return nil, controlapi.BadRequest(errors.New("placement must be gpu, cpu, remote or off"))
	}
	s.mu.Lock()
	s.posts = append(s.posts, Post{Path: "/v1/vision", Vision: &req})
	hook, reject, restart := s.onVision, s.rejectVision, !s.noRestart
	s.mu.Unlock()
	if reject != "" {
		return nil, controlapi.BadRequest(errors.New(reject))
	}
	if hook != nil && !req.DryRun {
		// After the answer, as the service's restart follows it.
		defer func() { go hook(req) }()
	}
	return &controlapi.VisionResponse{Diff: "-  \"vision\": ...\n+  \"vision\": ...", Written: !req.DryRun && restart,
		Restarted: !req.DryRun && restart, RestartNeeded: restart, SettingsChanged: !req.DryRun && !restart, Placement: req.Placement}, nil
}

// unload records POST /v1/server/unload and, as Strata does, the model
// goes: the state says when, and model.unloaded is published.
func (s *Service) unload(context.Context) error {
	s.record(Post{Path: "/v1/server/unload"})
	s.Change(func(st *controlapi.State) { st.Server.Unloaded = time.Now() },
		events.New("the model is not loaded (Strata's /health says so)", events.ModelUnloadedDetails{Source: events.Source{Source: "health"}}))
	return nil
}

// settings records the patch and, as the service does, its switches show
// in the state's settings from then on.
func (s *Service) settings(_ context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
	s.record(Post{Path: "/v1/settings", Settings: &p})
	s.mu.Lock()
	v := *controlapi.ViewOf(&settings.Settings{}) // the defaults, as the service shows empty settings
	if s.state.Settings != nil {
		v = *s.state.Settings
	}
	if p.FallbackCPU != nil {
		v.FallbackCPU = *p.FallbackCPU
	}
	if p.Notifications != nil {
		v.Notifications = *p.Notifications
	}
	s.state.Settings = &v
	s.mu.Unlock()
	st := s.State()
	return &st, nil
}
