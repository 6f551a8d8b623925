package daemon

import (
	"errors"
	"testing"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/service/controlserver"
)

// A conflict is a 409 and a bad request a 400, both with the backend's
// words; anything else stays an error of the service (500).
func TestHTTPErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{&backend.ConflictError{Err: errors.New("the config was changed by a person meanwhile")}, 409},
		{&backend.RequestError{Err: errors.New("unknown placement")}, 400},
		{errors.New("disk on fire"), 0},
	} {
		err := httpError(c.err)
		var re *controlserver.RequestError
		got := 0
		if errors.As(err, &re) {
			got = re.Code
		}
		if got != c.code || err.Error() != c.err.Error() {
			t.Errorf("%v: code %d (%v), want %d", c.err, got, err, c.code)
		}
	}
	if httpError(nil) != nil {
		t.Error("nil became an error")
	}
}

// The relay's events carry details, often no message: the service's log
// still says something.
func TestEventWordsForDetailOnlyEvents(t *testing.T) {
	e := events.Event{Kind: events.PictureEncoded, Details: map[string]any{"where": "remote", "ms": 2830.0}}
	if got := eventWords(e); got != "ms=2830 where=remote" {
		t.Errorf("got %q", got)
	}
	e.Message = "said"
	if got := eventWords(e); got != "said" {
		t.Errorf("got %q", got)
	}
}
