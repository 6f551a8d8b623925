package daemon

import (
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/events"
)

// M2: a newline in a host name forged a line in the service's log. An
// event's words are one line, whatever its message and details hold.
func TestEventWordsAreOneLine(t *testing.T) {
	forged := "pc2\n2026/12/01 20:00:00 server.ready: http://evil.example/v1"
	for _, e := range []events.Event{
		events.New("", events.RemoteConnectedDetails{Host: forged, RTTms: 3}),
		{Kind: events.RemoteUnreachable, Message: "no answer from " + forged + "\r\x1b[2K"},
	} {
		w := eventWords(e)
		if strings.ContainsAny(w, "\n\r\x1b") || !strings.Contains(w, `pc2\n2026`) {
			t.Errorf("%s: %q", e.Kind, w)
		}
	}
}
