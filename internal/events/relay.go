package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// What the relay may report (POST /v1/relay, or an event line in Strata's
// engine log): only its own kinds, each event bounded. Anything else (a
// server.ready with a URL of the sender's choosing, a config.changed naming
// a placement) is what the service itself observed, never a report.
const (
	kindVisionFallback Kind = "vision.fallback" // the relay read a picture on this CPU instead
	kindRemoteWake     Kind = "remote.wake"     // the relay sent a wake-on-LAN packet
)

var relayKinds = map[Kind]bool{
	RemoteConnected: true, RemoteDisconnected: true, RemoteReachable: true, RemoteUnreachable: true,
	kindRemoteWake: true, PictureEncoded: true, kindVisionFallback: true,
	EncoderReady: true, EncoderFailed: true, EncoderWoke: true, EncoderIdleStopped: true,
}

// Bounds on one relay event and on one report.
const (
	MaxRelayEvents     = 256  // events in one report (the relay's queue holds as many)
	MaxRelayEventBytes = 4096 // one event, as JSON
	MaxRelayMessage    = 1024 // its message, in bytes
	MaxRelayDetails    = 32   // its details
)

// RelayKind reports whether the relay may report k.
func RelayKind(k Kind) bool { return relayKinds[k] }

// CheckRelay says what is wrong with e as a relay report (nil: fine): a
// kind that is not the relay's, a message or details over the bounds, or
// details that are not plain values (numbers, strings, booleans).
func CheckRelay(e Event) error {
	if !RelayKind(e.Kind) {
		return fmt.Errorf("the relay does not report %q events (only remote.*, vision.picture, vision.fallback, vision.ready, vision.failed, vision.woke, vision.idle_stopped)", e.Kind)
	}
	if len(e.Message) > MaxRelayMessage {
		return fmt.Errorf("a %s event's message is %d bytes, over %d", e.Kind, len(e.Message), MaxRelayMessage)
	}
	if len(e.Details) > MaxRelayDetails {
		return fmt.Errorf("a %s event has %d details, over %d", e.Kind, len(e.Details), MaxRelayDetails)
	}
	for k, v := range e.Details {
		switch v.(type) {
		case nil, bool, float64, int, int64, string, json.Number:
		default:
			return fmt.Errorf("a %s event's detail %q is not a number, a string or a boolean", e.Kind, k)
		}
	}
	if b, _ := json.Marshal(e); len(b) > MaxRelayEventBytes {
		return fmt.Errorf("a %s event is %d bytes, over %d", e.Kind, len(b), MaxRelayEventBytes)
	}
	return nil
}

// OneLine makes s safe for a one-line log: control characters (a newline
// that would start a forged line) become escapes such as \n.
func OneLine(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := fmt.Sprintf("%q", string(r))
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
