package controlserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// recorder is a backend that notes every change it is asked for.
type recorder struct {
	mu    sync.Mutex
	calls []string
	ctl   fakeControl
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func (r *recorder) changes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	return append(append([]string(nil), r.calls...), r.ctl.actions...)
}

func (r *recorder) backend(bus *events.Bus) Backend {
	return Backend{
		Bus: bus,
		Owner: ownertest.Funcs{
			StartF:   r.ctl.Start,
			StopF:    r.ctl.Stop,
			RestartF: r.ctl.Restart,
			SetVisionF: func(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
				r.note("vision " + req.Placement)
				return &controlapi.VisionResponse{}, nil
			},
			PatchSettingsF: func(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
				r.note("settings")
				return &controlapi.State{}, nil
			},
			RemoteF: func(ctx context.Context) (*settings.Remote, error) { return nil, nil },
			RecordRemoteF: func(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
				r.note("remote")
				return nil, nil
			},
			LogsF: func(context.Context, int) (*controlapi.LogsResponse, error) {
				return &controlapi.LogsResponse{Lines: []string{"secret line"}}, nil
			},
		},
		Relay: func(ctx context.Context, rep controlapi.RelayReport) error {
			for _, e := range rep.Events {
				bus.Publish(e)
			}
			r.note("relay")
			return nil
		},
	}
}

// call sends method path with tok and body; it returns the status and the
// error sentence.
func call(t *testing.T, base, tok, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e controlapi.Error
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error
}

// The one rule, by method and path: every account reads; only the operator
// changes anything, including through routes this test does not know of
// (a colleague's new POST route is covered without a line of its own); the
// relay's token reports the relay's events and nothing else; the logs are
// the operator's. A refusal is a 403 that says who may, and reaches no
// backend.
func TestOnlyTheOperatorChangesAnything(t *testing.T) {
	bus := events.NewBus(100)
	rec := &recorder{}
	s, c := serve(t, rec.backend(bus))
	s.Owner = "ann"
	base := c.BaseURL
	writes := []struct{ method, path, body string }{
		{"POST", "/v1/vision", `{"placement":"cpu"}`},
		{"POST", "/v1/settings", `{"fallback_cpu":true}`},
		{"POST", "/v1/remote", `{"unpair":true}`},
		{"POST", "/v1/server/restart", ``},
		{"POST", "/v1/server/stop", ``},
		{"POST", "/v1/config", `{"config":"iq2_xs"}`}, // routes added by other changes
		{"POST", "/v1/config/repair", `{}`},
		{"POST", "/v1/strata/update", `{}`},
		{"POST", "/v1/anything-new", `{}`},
		{"PUT", "/v1/settings", `{}`},
		{"DELETE", "/v1/remote", ``},
		{"PATCH", "/v1/state", `{}`},
		{"POST", "/v1/state", `{}`},
	}
	relayBody := `{"events":[{"kind":"vision.picture","details":{"ms":120,"where":"remote"}}]}`
	for _, who := range []struct {
		name string
		tok  string
	}{{"reader", s.ReadToken()}, {"relay", s.RelayToken()}} {
		for _, w := range writes {
			code, msg := call(t, base, who.tok, w.method, w.path, w.body)
			if code != http.StatusForbidden || !strings.Contains(msg, "ann (the Strata install's owner) and the administrators") {
				t.Errorf("%s token, %s %s: %d %q, want 403 saying who may", who.name, w.method, w.path, code, msg)
			}
		}
		if code, msg := call(t, base, who.tok, "GET", "/v1/logs", ""); code != http.StatusForbidden || !strings.Contains(msg, "ann") {
			t.Errorf("%s token, GET /v1/logs: %d %q", who.name, code, msg)
		}
		for _, p := range []string{"/v1/state", "/v1/remote", "/v1/events?since=0"} {
			if code, msg := call(t, base, who.tok, "GET", p, ""); code != 200 {
				t.Errorf("%s token, GET %s: %d %q", who.name, p, code, msg)
			}
		}
	}
	if code, msg := call(t, base, s.ReadToken(), "POST", "/v1/relay", relayBody); code != http.StatusForbidden {
		t.Errorf("the read token reported for the relay: %d %q", code, msg)
	}
	if got := rec.changes(); len(got) != 0 {
		t.Fatalf("refused requests reached the backend: %v", got)
	}
	if code, msg := call(t, base, s.RelayToken(), "POST", "/v1/relay", relayBody); code != 200 {
		t.Fatalf("the relay's report: %d %q", code, msg)
	}
	// The operator may do all of it.
	for _, w := range writes[:5] {
		if code, msg := call(t, base, s.Token(), w.method, w.path, w.body); code != 200 {
			t.Errorf("operator, %s %s: %d %q", w.method, w.path, code, msg)
		}
	}
	if code, _ := call(t, base, s.Token(), "GET", "/v1/logs", ""); code != 200 {
		t.Errorf("operator, GET /v1/logs: %d", code)
	}
	if got := rec.changes(); len(got) != 6 {
		t.Fatalf("the operator's changes: %v", got)
	}
}

// M2: the relay's token reports only the relay's own kinds, bounded; a
// forged server.ready (a URL of the sender's choosing), a config.changed
// (a placement), an oversized event or too many, or too fast, are refused
// whole, and nothing of them reaches the events.
func TestRelayReportsAreBounded(t *testing.T) {
	bus := events.NewBus(3000)
	rec := &recorder{}
	s, c := serve(t, rec.backend(bus))
	relay := *c
	relay.Token = s.RelayToken()
	ctx := context.Background()
	big := strings.Repeat("x", 100<<10)
	refused := []controlapi.RelayReport{
		{Events: []events.Event{events.New("", events.ServerReadyDetails{URL: "http://evil.example/v1"})}},
		{Events: []events.Event{events.New("", events.ConfigChangedDetails{Placement: "gpu"})}},
		{Events: []events.Event{{Kind: events.PictureEncoded, Details: map[string]any{"nested": map[string]any{"a": 1}}}}},
		{Events: []events.Event{{Kind: events.PictureEncoded, Details: map[string]any{strings.Repeat("k", 100): 1}}}},
		{Events: []events.Event{{Kind: events.PictureEncoded, Details: manyDetails(events.MaxRelayDetails + 1)}}},
		{Events: make([]events.Event, events.MaxRelayEvents+1)},
	}
	refused[len(refused)-1], refused[len(refused)-2] = refused[len(refused)-2], refused[len(refused)-1]
	for i := range refused[len(refused)-1].Events {
		refused[len(refused)-1].Events[i].Kind = events.PictureEncoded
	}
	for i, r := range refused {
		var se *controlapi.StatusError
		if err := relay.ReportRelay(ctx, r); !errors.As(err, &se) || se.Code != http.StatusBadRequest {
			t.Errorf("report %d: %v, want 400", i, err)
		}
		// The operator's token does not widen what a relay report may hold.
		if err := c.ReportRelay(ctx, r); !errors.As(err, &se) || se.Code != http.StatusBadRequest {
			t.Errorf("report %d with the operator's token: %v, want 400", i, err)
		}
	}
	if bus.Last() != 0 {
		evs, _ := bus.Since(0)
		t.Fatalf("refused reports published %d events: %+v", len(evs), evs[0])
	}
	// Long texts (an error from the second PC) are cut, not refused.
	if err := relay.ReportRelay(ctx, controlapi.RelayReport{Events: []events.Event{events.New(big,
		events.PictureEncodedDetails{Error: strings.Repeat("é", 5000), MS: 12})}}); err != nil {
		t.Fatal(err)
	}
	evs, _ := bus.Since(0)
	var cut events.PictureEncodedDetails
	if len(evs) == 1 {
		cut = events.Get[events.PictureEncodedDetails](evs[0])
	}
	if len(evs) != 1 || len(evs[0].Message) > events.MaxRelayMessage || cut.Error == "" || len(cut.Error) > events.MaxRelayString ||
		!utf8.ValidString(cut.Error) || cut.MS != 12 {
		t.Fatalf("the cut event: %d events, message %d bytes, details %v", len(evs), len(evs[0].Message), evs[0].Details)
	}
	first := bus.Last()
	// 400 reports of the biggest events allowed: the memory they hold is
	// bounded by the rate (the burst, then 20 a second) and the bus.
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ev := events.Event{Kind: events.PictureEncoded, Message: strings.Repeat("m", 1000), Details: manyDetails(10)}
	batch := make([]events.Event, 8)
	for i := range batch {
		batch[i] = ev
	}
	taken, limited := 0, 0
	for i := 0; i < 400; i++ {
		err := relay.ReportRelay(ctx, controlapi.RelayReport{Events: batch})
		var se *controlapi.StatusError
		switch {
		case err == nil:
			taken++
		case errors.As(err, &se) && se.Code == http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("report %d: %v", i, err)
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("400 reports of 8 largest events: %d taken, %d refused as too many; heap %d -> %d KiB", taken, limited, before.HeapAlloc>>10, after.HeapAlloc>>10)
	if limited == 0 || bus.Last()-first > uint64(relayBurst+8*relayPerSec*60) {
		t.Fatalf("the rate bound did not hold: %d taken, %d events published", taken, bus.Last())
	}
}

func manyDetails(n int) map[string]any {
	d := map[string]any{}
	for i := 0; i < n; i++ {
		d[fmt.Sprintf("detail_%02d", i)] = strings.Repeat("v", events.MaxRelayString)
	}
	return d
}

// The relay's kinds are exactly what the relay sends (internal/relay),
// checked by the same function for the engine log's event lines.
func TestRelayKinds(t *testing.T) {
	for _, k := range []events.Kind{events.RemoteConnected, events.RemoteUnreachable, events.PictureEncoded, events.VisionFallback, events.RemoteWake, events.EncoderDegraded, events.EncoderReady} {
		if events.CheckRelay(events.Event{Kind: k}) != nil {
			t.Errorf("%s refused", k)
		}
	}
	for _, k := range []events.Kind{events.ServerReady, events.ServerFailed, events.ConfigChanged, "settings.changed", "config.switched", ""} {
		if events.CheckRelay(events.Event{Kind: k}) == nil {
			t.Errorf("%s taken from the relay", k)
		}
	}
	if got := events.OneLine("pc2\n2026 forged: line\x1b[2J"); strings.ContainsAny(got, "\n\x1b") {
		t.Errorf("OneLine left control characters: %q", got)
	}
}

// The rule reads the cleaned path: no spelling of /v1/logs gets past it.
func TestLogsUnderAnyName(t *testing.T) {
	bus := events.NewBus(10)
	rec := &recorder{}
	s, c := serve(t, rec.backend(bus))
	for _, p := range []string{"/v1/logs", "/v1/logs/", "/v1/./logs", "/v1//logs", "/v1/x/../logs"} {
		req, _ := http.NewRequest("GET", c.BaseURL+p, nil)
		req.Header.Set("Authorization", "Bearer "+s.ReadToken())
		// Do not follow the mux's redirect: the first answer is what counts.
		resp, err := (&http.Transport{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "secret line") {
			t.Errorf("GET %s with the read token: %d %s", p, resp.StatusCode, b)
		}
	}
}

// M5's other half: the server's output lines an exit event quotes are the
// log's, so only an operator's /v1/events carries them.
func TestEventsQuoteTheLogOnlyToOperators(t *testing.T) {
	bus := events.NewBus(10)
	rec := &recorder{}
	s, c := serve(t, rec.backend(bus))
	bus.Publish(events.New("exited", events.ServerExitedDetails{Code: 3, LastLines: []string{"Traceback: secret"}}))
	ctx := context.Background()
	for _, who := range []struct {
		tok  string
		want bool
	}{{s.ReadToken(), false}, {s.RelayToken(), false}, {s.Token(), true}} {
		cl := *c
		cl.Token = who.tok
		r, err := cl.Events(ctx, 0, 0)
		if err != nil || len(r.Events) != 1 {
			t.Fatalf("events: %v %+v", err, r)
		}
		got := events.Get[events.ServerExitedDetails](r.Events[0])
		has := len(got.LastLines) > 0
		if has != who.want || got.Code == 0 {
			t.Errorf("token %s...: last_lines %v, details %v", who.tok[:6], has, r.Events[0].Details)
		}
	}
	evs, _ := bus.Since(0)
	if len(events.Get[events.ServerExitedDetails](evs[0]).LastLines) == 0 {
		t.Fatal("the bus's own event lost its lines")
	}
}
