package controlserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	bus.Publish(events.Event{Kind: events.ConfigSwitched, Message: "switched", Details: map[string]any{
		"previous": "/s/strata-a.json", "running": "/s/strata-b.json", "diff": diff}})
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
		if r.Events[0].Details["running"] != "/s/strata-b.json" {
			t.Errorf("token %s...: the switch's paths are gone: %v", who.tok[:6], r.Events[0].Details)
		}
	}
}
