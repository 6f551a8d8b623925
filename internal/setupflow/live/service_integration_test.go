package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// standInAPI serves the control API's events and logs from a script: each
// events request returns the next batch.
type standInAPI struct {
	mu       sync.Mutex
	batches  [][]events.Event
	logs     [][]string
	actions  []string
	requests int
}

func (s *standInAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error":"no token"}`, http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/state":
		json.NewEncoder(w).Encode(controlapi.State{Seq: 7, Server: controlapi.ServerState{Phase: "ready"}})
	case r.URL.Path == "/v1/events":
		since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
		var out []events.Event
		if s.requests < len(s.batches) {
			out = s.batches[s.requests]
		}
		s.requests++
		next := since
		for _, e := range out {
			next = e.Seq
		}
		json.NewEncoder(w).Encode(controlapi.EventsResponse{Events: out, Next: next})
	case r.URL.Path == "/v1/logs":
		i := min(s.requests-1, len(s.logs)-1)
		json.NewEncoder(w).Encode(controlapi.LogsResponse{Lines: s.logs[max(i, 0)]})
	case strings.HasPrefix(r.URL.Path, "/v1/server/"):
		s.actions = append(s.actions, strings.TrimPrefix(r.URL.Path, "/v1/server/"))
	default:
		http.NotFound(w, r)
	}
}

func serviceFor(api *standInAPI) (*live.Service, *httptest.Server) {
	srv := httptest.NewServer(api)
	return &live.Service{Exe: "/nonexistent/strata-service", Poll: 10 * time.Millisecond,
		Client: func() (*controlapi.Client, error) {
			return &controlapi.Client{BaseURL: srv.URL, Token: "tok", HTTP: srv.Client()}, nil
		}}, srv
}

func TestServiceFollowUntilReady(t *testing.T) {
	api := &standInAPI{
		batches: [][]events.Event{
			{{Seq: 8, Kind: events.ServerStarting}},
			{{Seq: 9, Kind: events.ServerProgress, Message: "filling the GPU's expert cache"}},
			{{Seq: 10, Kind: events.ServerReady, Message: "ready: http://127.0.0.1:8080/v1"}},
		},
		logs: [][]string{{"a", "b"}, {"a", "b", "c"}, {"b", "c", "d"}},
	}
	s, srv := serviceFor(api)
	defer srv.Close()
	st, err := s.Status(context.Background())
	if err != nil || !st.Running || st.Seq != 7 {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := s.Start(context.Background(), true); err != nil || api.actions[0] != "restart" {
		t.Fatalf("start: %v %v", err, api.actions)
	}
	var lines, texts []string
	err = s.Follow(context.Background(), st.Seq, func(p setupflow.Progress) {
		if p.LogLine != "" {
			lines = append(lines, p.LogLine)
		}
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines, ",") != "a,b,c,d" {
		t.Errorf("log lines %q (each once, in order)", lines)
	}
	if !strings.Contains(strings.Join(texts, "|"), "filling the GPU's expert cache") {
		t.Errorf("phases %q", texts)
	}
}

func TestServiceFollowFailure(t *testing.T) {
	api := &standInAPI{
		batches: [][]events.Event{{{Seq: 8, Kind: events.ServerFailed, Message: "port 8080 is already in use"}}},
		logs:    [][]string{{"[strata] port 8080 is already in use"}},
	}
	s, srv := serviceFor(api)
	defer srv.Close()
	err := s.Follow(context.Background(), 7, func(setupflow.Progress) {})
	if err == nil || !strings.HasPrefix(err.Error(), "port 8080 is already in use. ") || !strings.Contains(err.Error(), "run setup again") {
		t.Fatalf("err %v", err)
	}
}

func TestServiceFollowTimesOut(t *testing.T) {
	api := &standInAPI{logs: [][]string{{}}}
	s, srv := serviceFor(api)
	defer srv.Close()
	s.StartTimeout = 100 * time.Millisecond
	err := s.Follow(context.Background(), 7, func(setupflow.Progress) {})
	if err == nil || !strings.Contains(err.Error(), "did not become ready") {
		t.Fatalf("err %v", err)
	}
}

// Status and Install run the real strata-service program when the control
// API does not answer: built here from ./service.
func TestServiceStatusFromTheProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds strata-service")
	}
	exe := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
	t.Setenv("STRATA_COMPANION_HOME", t.TempDir())
	s := &live.Service{Exe: exe, Client: func() (*controlapi.Client, error) { return nil, controlapi.ErrNotRunning }}
	st, err := s.Status(context.Background())
	if err != nil || st.Unknown || st.Running {
		t.Fatalf("status %+v %v", st, err)
	}
	t.Logf("status here: %+v", st)
}
