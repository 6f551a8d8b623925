package controlapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
)

// A client finds the service from the address and token files, sends the
// token, and turns the service's answers into values or readable errors.
func TestClientAgainstAServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(Error{Error: "a token is required"})
			return
		}
		switch r.URL.Path {
		case "/v1/state":
			json.NewEncoder(w).Encode(State{Seq: 7, Server: ServerState{Phase: PhaseReady}})
		case "/v1/events":
			if r.URL.Query().Get("since") != "7" || r.URL.Query().Get("wait") != "30" {
				t.Errorf("events query %q", r.URL.RawQuery)
			}
			json.NewEncoder(w).Encode(EventsResponse{Events: []events.Event{{Seq: 8, Kind: events.ServerRestarting}}, Next: 8})
		case "/v1/vision":
			var req VisionRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.Placement != "cpu" || r.Method != http.MethodPost {
				t.Errorf("vision request %s %+v", r.Method, req)
			}
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(Error{Error: "no mmproj found"})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	dir := t.TempDir()
	empty := t.TempDir()
	os.WriteFile(filepath.Join(dir, "control-addr"), []byte(strings.TrimPrefix(srv.URL, "http://")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "control-token"), []byte("tok-123\n"), 0o644)

	if _, err := NewClientFrom(empty); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no address file: %v, want ErrNotRunning", err)
	}
	c, err := NewClientFrom(empty, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.State(ctx)
	if err != nil || st.Seq != 7 || st.Server.Phase != PhaseReady {
		t.Fatalf("State = %+v, %v", st, err)
	}
	ev, err := c.Events(ctx, 7, 30*time.Second)
	if err != nil || ev.Next != 8 || len(ev.Events) != 1 || ev.Events[0].Kind != events.ServerRestarting {
		t.Fatalf("Events = %+v, %v", ev, err)
	}
	_, err = c.SetVision(ctx, VisionRequest{Placement: "cpu"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 400 || !strings.Contains(err.Error(), "no mmproj found") {
		t.Fatalf("SetVision error = %v", err)
	}
	c.Token = "wrong"
	if _, err := c.State(ctx); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("wrong token: %v", err)
	}
	srv.Close()
	if _, err := c.State(ctx); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("service gone: %v, want ErrNotRunning", err)
	}
}
