package controlserver

import (
	"context"
	"errors"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
)

type fakeControl struct {
	mu      sync.Mutex
	actions []string
}

func (f *fakeControl) do(a string) error {
	f.mu.Lock()
	f.actions = append(f.actions, a)
	f.mu.Unlock()
	return nil
}
func (f *fakeControl) Start(context.Context) error   { return f.do("start") }
func (f *fakeControl) Stop(context.Context) error    { return f.do("stop") }
func (f *fakeControl) Restart(context.Context) error { return f.do("restart") }

// serve serves b with the default timeouts (serveWith) and returns a client.
func serve(t *testing.T, b Backend) (*Server, *controlapi.Client) {
	t.Helper()
	s, addr := serveWith(t, b, DefaultTimeouts)
	return s, &controlapi.Client{BaseURL: "http://" + addr, Token: s.Token(), HTTP: &http.Client{}}
}

func TestGuards(t *testing.T) {
	bus := events.NewBus(10)
	s, c := serve(t, Backend{Bus: bus, Owner: ownertest.Funcs{StateF: func(context.Context) (*controlapi.State, error) { return &controlapi.State{Seq: 7}, nil }}})

	st, err := c.State(context.Background())
	if err != nil || st.Seq != 7 {
		t.Fatalf("state with the token: %v %+v", err, st)
	}
	var se *controlapi.StatusError
	bad := *c
	bad.Token = "wrong"
	if _, err := bad.State(context.Background()); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("a wrong token: %v", err)
	}
	bad.Token = ""
	if _, err := bad.State(context.Background()); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("no token: %v", err)
	}

	// DNS rebinding: a page on evil.example resolved to 127.0.0.1.
	req, _ := http.NewRequest("GET", c.BaseURL+"/v1/state", nil)
	req.Host = "evil.example:80"
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("a foreign Host header got %d", resp.StatusCode)
	}

	// Not from this machine (the listener is on loopback, so only the
	// handler can be shown such a peer).
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/v1/state", nil)
	r.RemoteAddr = "192.168.1.20:40000"
	r.Host = "127.0.0.1:1"
	r.Header.Set("Authorization", "Bearer "+s.Token())
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != 403 {
		t.Fatalf("a remote peer got %d", rec.Code)
	}
	for _, h := range []string{"localhost:5", "[::1]:5", "127.0.0.1"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/v1/state", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Host = h
		r.Header.Set("Authorization", "Bearer "+s.Token())
		s.Handler().ServeHTTP(rec, r)
		if rec.Code != 200 {
			t.Errorf("Host %s got %d", h, rec.Code)
		}
	}
	if _, err := Listen("0.0.0.0:0"); err == nil {
		t.Error("Listen accepted a non-loopback address")
	}
}

func TestServerActionsAndLogs(t *testing.T) {
	fc := &fakeControl{}
	_, c := serve(t, Backend{Bus: events.NewBus(10), Owner: ownertest.Funcs{StartF: fc.Start, StopF: fc.Stop, RestartF: fc.Restart,
		LogsF: func(_ context.Context, n int) (*controlapi.LogsResponse, error) {
			return &controlapi.LogsResponse{File: "x.log", Lines: []string{strings.Repeat("l", n)}}, nil
		}}})
	for _, a := range []string{"start", "stop", "restart"} {
		if err := c.Server(context.Background(), a); err != nil {
			t.Fatal(a, err)
		}
	}
	var se *controlapi.StatusError
	if err := c.Server(context.Background(), "explode"); !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("unknown action: %v", err)
	}
	if strings.Join(fc.actions, ",") != "start,stop,restart" {
		t.Errorf("actions %v", fc.actions)
	}
	l, err := c.Logs(context.Background(), 3)
	if err != nil || l.File != "x.log" || l.Lines[0] != "lll" {
		t.Fatalf("logs %v %+v", err, l)
	}
	if _, err := c.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu"}); !errors.As(err, &se) || se.Code != 501 {
		t.Fatalf("vision without a backend: %v", err)
	}
}

func TestVisionErrors(t *testing.T) {
	_, c := serve(t, Backend{Bus: events.NewBus(10), Owner: ownertest.Funcs{SetVisionF: func(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
		if req.Placement == "moon" {
			return nil, controlapi.BadRequest(errors.New("unknown placement \"moon\""))
		}
		return &controlapi.VisionResponse{Diff: "-a\n+b\n", Written: !req.DryRun}, nil
	}}})
	r, err := c.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu", DryRun: true})
	if err != nil || r.Written || r.Diff == "" {
		t.Fatalf("%v %+v", err, r)
	}
	var se *controlapi.StatusError
	if _, err := c.SetVision(context.Background(), controlapi.VisionRequest{Placement: "moon"}); !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Message, "moon") {
		t.Fatalf("bad placement: %v", err)
	}
}

func TestLongPoll(t *testing.T) {
	bus := events.NewBus(100)
	_, c := serve(t, Backend{Bus: bus, Owner: ownertest.Funcs{}})
	ctx := context.Background()
	// Nothing yet: wait=0 answers at once, empty.
	r, err := c.Events(ctx, 0, 0)
	if err != nil || len(r.Events) != 0 || r.Next != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	// A waiting poll returns when an event is published: the event is
	// published from inside the handler's wait (the bus's blocking hook),
	// so the poll was blocked when it came, not answered from what was there.
	var blocked atomic.Int32
	bus.SetBlockingHook(func() {
		if blocked.Add(1) == 1 {
			bus.Publish(events.Event{Kind: events.ServerStarting})
		}
	})
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	r, err = c.Events(pctx, 0, 30*time.Second)
	if err != nil || len(r.Events) != 1 || r.Next != 1 || r.Events[0].Kind != events.ServerStarting || blocked.Load() != 1 {
		t.Fatalf("%v %+v (the poll blocked %d times, want once)", err, r, blocked.Load())
	}
	// Events already there are answered without waiting, even with a long
	// wait: the handler never blocks (the hook does not run).
	bus.Publish(events.Event{Kind: events.ServerReady})
	start := time.Now()
	r, err = c.Events(pctx, 1, 60*time.Second)
	if err != nil || len(r.Events) != 1 || r.Events[0].Seq != 2 {
		t.Fatalf("%v %+v", err, r)
	}
	if n := blocked.Load(); n != 1 {
		t.Fatalf("the poll blocked although an event was there (%d)", n)
	}
	t.Logf("a poll with an event there answered in %v", time.Since(start))
	// A since from a previous service run (numbers began again): a gap.
	r, err = c.Events(ctx, 999, 0)
	if err != nil || !r.Gap || r.Next != 2 {
		t.Fatalf("stale since: %v %+v", err, r)
	}
}

// A client that drops its connection at random moments and resumes from
// the last sequence number it saw gets every event exactly once, in order.
func TestReconnectingClientMissesNothing(t *testing.T) {
	bus := events.NewBus(10000)
	_, c := serve(t, Backend{Bus: bus, Owner: ownertest.Funcs{}})
	const n = 400
	go func() {
		for i := 0; i < n; i++ {
			bus.Publish(events.Event{Kind: events.ServerProgress, Details: map[string]any{"i": i}})
			if i%7 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var got []uint64
	var next uint64
	rnd := rand.New(rand.NewSource(1))
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd.Intn(3))*time.Millisecond+100*time.Microsecond)
		if rnd.Intn(3) == 0 {
			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		}
		r, err := c.Events(ctx, next, 2*time.Second)
		cancel()
		if err != nil {
			continue // dropped: resume from next
		}
		if r.Gap {
			t.Fatal("gap with a buffer larger than the stream")
		}
		for _, e := range r.Events {
			got = append(got, e.Seq)
		}
		next = r.Next
	}
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("event %d has seq %d: missed or repeated", i, s)
		}
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	af, tf := filepath.Join(dir, "state", "control-addr"), filepath.Join(dir, "state", "control-token")
	if err := WriteFiles(af, tf, "127.0.0.1:5000", "tok"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(tf)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("token file mode %v", st.Mode().Perm())
	}
	RemoveFiles(af, tf, "127.0.0.1:6000", "other")
	if _, err := os.Stat(af); err != nil {
		t.Error("removed another instance's address file")
	}
	RemoveFiles(af, tf, "127.0.0.1:5000", "tok")
	if _, err := os.Stat(af); err == nil {
		t.Error("the address file is still there")
	}
}

// BenchmarkEventLatency is the time from Publish to a waiting long-poll
// client having the event (loopback HTTP, one client).
func BenchmarkEventLatency(b *testing.B) {
	bus := events.NewBus(1 << 16)
	s, err := New(Backend{Bus: bus, Owner: ownertest.Funcs{}})
	if err != nil {
		b.Fatal(err)
	}
	l, err := Listen("")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Serve(ctx, l)
	c := &controlapi.Client{BaseURL: "http://" + l.Addr().String(), Token: s.Token(), HTTP: &http.Client{}}
	b.ResetTimer()
	var since uint64
	for i := 0; i < b.N; i++ {
		got := make(chan struct{})
		go func() {
			r, err := c.Events(ctx, since, 30*time.Second)
			if err == nil {
				since = r.Next
			}
			close(got)
		}()
		bus.Publish(events.Event{Kind: events.ServerProgress})
		<-got
	}
}
