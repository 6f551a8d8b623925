package controlserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
)

// Issue 32, Medium: config.switched carried the config's diff, redacted by
// key name only: env values such as NGROK_AUTHTOKEN and DATABASE_URL were
// readable with the read token. Now readers (and the relay) get the event
// without the diff, the env or any detail named like a secret; operators
// still see them.
func TestReadersSeeNoSecretsInEvents(t *testing.T) {
	bus := events.NewBus(10)
	rec := &recorder{}
	s, c := serve(t, rec.backend(bus))
	diff := `+  "env": {"NGROK_AUTHTOKEN": "2abcNGROKsecret", "DATABASE_URL": "postgres://u:pgSECRET@db/x"}`
	bus.Publish(events.New("switched", events.ConfigSwitchedDetails{
		Previous: "/s/strata-a.json", Running: "/s/strata-b.json", Diff: diff}))
	bus.Publish(events.Event{Kind: events.ConfigChanged, Message: "changed", Details: map[string]any{
		"path": "/s/strata-b.json", "api_key": "sk-APIKEYsecret", "env": map[string]string{"HF_TOKEN": "hfSECRET"}}})
	ctx := context.Background()
	for _, who := range []struct {
		tok      string
		operator bool
	}{{s.ReadToken(), false}, {s.RelayToken(), false}, {s.Token(), true}} {
		cl := *c
		cl.Token = who.tok
		r, err := cl.Events(ctx, 0, 0)
		if err != nil || len(r.Events) != 2 {
			t.Fatalf("events: %v %+v", err, r)
		}
		b, _ := json.Marshal(r)
		text := string(b)
		for _, secret := range []string{"NGROKsecret", "pgSECRET", "APIKEYsecret", "hfSECRET"} {
			if strings.Contains(text, secret) != who.operator {
				t.Errorf("token %s... (operator %v): %s shown %v:\n%s", who.tok[:6], who.operator, secret, !who.operator, text)
			}
		}
		if events.Get[events.ConfigSwitchedDetails](r.Events[0]).Running != "/s/strata-b.json" {
			t.Errorf("token %s...: the switch's paths are gone: %v", who.tok[:6], r.Events[0].Details)
		}
	}
}

// A reader's long-poll is shorter than an operator's: wait=600 with the
// read token ends after Limits.ReaderMaxWait (1 s here), not 10 minutes.
func TestAReadersWaitIsBounded(t *testing.T) {
	bus := events.NewBus(10)
	bus.Publish(events.Event{Kind: events.ServerReady, Message: "ready"})
	s, err := New(Backend{Bus: bus, Owner: ownertest.Funcs{}})
	if err != nil {
		t.Fatal(err)
	}
	s.Limits = DefaultLimits
	s.Limits.ReaderMaxWait = time.Second
	l, err := Listen("")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(sctx, l); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	rd := &controlapi.Client{BaseURL: "http://" + l.Addr().String(), Token: s.ReadToken(), HTTP: &http.Client{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	r, err := rd.Events(ctx, 1, 600*time.Second)
	if err != nil || len(r.Events) != 0 {
		t.Fatalf("a reader's wait: %v %+v", err, r)
	}
	t.Logf("a reader's wait=600 answered after %s", time.Since(start).Round(time.Millisecond))
}
