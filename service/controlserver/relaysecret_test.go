package controlserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// TestOnlyTheServicesRelayReports: with the relay token, a report is taken
// only with the secret of the Strata start the service runs now
// (controlapi.EnvRelaySecret, which Strata hands its relay): a relay
// started by hand under the same account (it can read the relay token) or
// by a Strata started outside the service has none or another, and is
// refused with a 403 that says why; nothing of its report reaches the state.
// NewRelayClient sends the secret it finds in its environment.
func TestOnlyTheServicesRelayReports(t *testing.T) {
	bus := events.NewBus(100)
	rec := &recorder{}
	b := rec.backend(bus)
	b.RelayStarted = func(secret string) bool { return secret == "this-start" }
	s, c := serve(t, b)
	relay := *c
	relay.Token = s.RelayToken()
	rep := controlapi.RelayReport{Events: []events.Event{events.New("ok", events.PictureEncodedDetails{OK: new(true), RelayMark: events.RelayMark{Relay: 4242}})}}
	var se *controlapi.StatusError
	for _, secret := range []string{"", "another-start"} {
		relay.RelaySecret = secret
		err := relay.ReportRelay(context.Background(), rep)
		if !errors.As(err, &se) || se.Code != 403 || !strings.Contains(se.Message, "not started by the Strata server the service runs") {
			t.Errorf("secret %q: %v, want a 403 that says why", secret, err)
		}
	}
	if got := rec.changes(); len(got) != 0 {
		t.Fatalf("a refused report reached the backend: %v", got)
	}
	relay.RelaySecret = "this-start"
	if err := relay.ReportRelay(context.Background(), rep); err != nil {
		t.Fatalf("the service's own relay: %v", err)
	}
	// An operator (the owner, an administrator) reports as it likes.
	if err := c.ReportRelay(context.Background(), rep); err != nil {
		t.Fatalf("an operator's report: %v", err)
	}
	if got := rec.changes(); len(got) != 2 {
		t.Fatalf("taken: %v, want 2 reports", got)
	}
}
