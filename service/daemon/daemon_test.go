package daemon

import (
	"errors"
	"testing"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// A conflict is a 409 and a bad request a 400, both with the backend's
// words; anything else stays an error of the service (500): the one
// mapping (controlapi.StatusOf) the daemon's answers and the in-process
// owner's share.
func TestHTTPErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{&backend.ConflictError{Err: errors.New("the config was changed by a person meanwhile")}, 409},
		{&backend.RequestError{Err: errors.New("unknown placement")}, 400},
		{errors.New("disk on fire"), 500},
	} {
		se := controlapi.StatusOf(c.err)
		if se.Code != c.code || se.Message != c.err.Error() || !errors.Is(se, c.err) {
			t.Errorf("%v: code %d (%v), want %d", c.err, se.Code, se, c.code)
		}
	}
	if controlapi.StatusOf(nil) != nil {
		t.Error("nil became an error")
	}
}

// The relay's events carry details, often no message: the service's log
// still says something.
func TestEventWordsForDetailOnlyEvents(t *testing.T) {
	e := events.New("", events.PictureEncodedDetails{Where: "remote", MS: 2830})
	if got := eventWords(e); got != "ms=2830 where=remote" {
		t.Errorf("got %q", got)
	}
	e.Message = "said"
	if got := eventWords(e); got != "said" {
		t.Errorf("got %q", got)
	}
}
