package events

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the relay may report (POST /v1/relay, or an event line in Strata's
// engine log): only its own kinds, each event bounded. Anything else (a
// server.ready with a URL of the sender's choosing, a config.changed naming
// a placement) is what the service itself observed, never a report.
var relayKinds = map[Kind]bool{
	RemoteConnected: true, RemoteDisconnected: true, RemoteReachable: true, RemoteUnreachable: true,
	RemoteWake: true, PictureEncoded: true, VisionFallback: true, EncoderDegraded: true,
	EncoderReady: true, EncoderFailed: true, EncoderWoke: true, EncoderIdleStopped: true,
}

// Bounds on one relay event and on one report.
const (
	MaxRelayEvents     = 256  // events in one report (the relay's queue holds as many)
	MaxRelayEventBytes = 4096 // one event, as JSON, after the cuts below
	MaxRelayMessage    = 1024 // its message, in bytes (longer is cut)
	MaxRelayDetails    = 32   // its details
	MaxRelayDetailKey  = 64   // a detail's name, in bytes
	MaxRelayString     = 256  // a detail's string value, in bytes (longer is cut)
)

// RelayKind reports whether the relay may report k.
func RelayKind(k Kind) bool { return relayKinds[k] }

// CheckRelay says what is wrong with e as a relay report (nil: fine, once
// BoundRelay has cut its long texts).
func CheckRelay(e Event) error {
	_, err := BoundRelay(e)
	return err
}

// BoundRelay is e as the service takes it from the relay: its message and
// string details cut to their bounds (an error text from the second PC may
// be long; a report is not lost for it), or an error for what cannot be
// taken at all: a kind that is not the relay's, too many details, a detail
// that is not a number, a string or a boolean, or an event still over
// MaxRelayEventBytes.
func BoundRelay(e Event) (Event, error) {
	if !RelayKind(e.Kind) {
		return e, fmt.Errorf("the relay does not report %q events (only remote.*, vision.picture, vision.fallback, vision.degraded, vision.ready, vision.failed, vision.woke, vision.idle_stopped)", e.Kind)
	}
	if len(e.Details) > MaxRelayDetails {
		return e, fmt.Errorf("a %s event has %d details, over %d", e.Kind, len(e.Details), MaxRelayDetails)
	}
	e.Message = cut(e.Message, MaxRelayMessage)
	if len(e.Details) > 0 {
		d := make(map[string]any, len(e.Details))
		for k, v := range e.Details {
			if len(k) > MaxRelayDetailKey {
				return e, fmt.Errorf("a %s event's detail name is %d bytes, over %d", e.Kind, len(k), MaxRelayDetailKey)
			}
			switch v := v.(type) {
			case nil, bool, float64, int, int64, json.Number:
				d[k] = v
			case string:
				d[k] = cut(v, MaxRelayString)
			default:
				return e, fmt.Errorf("a %s event's detail %q is not a number, a string or a boolean", e.Kind, k)
			}
		}
		e.Details = d
	}
	if b, _ := json.Marshal(e); len(b) > MaxRelayEventBytes {
		return e, fmt.Errorf("a %s event is %d bytes, over %d", e.Kind, len(b), MaxRelayEventBytes)
	}
	return e, nil
}

// cut shortens s to at most n bytes, on a character boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
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

// Words is e's message for a log, on one line; an event with only details
// (the relay's: where, ms, host) is written as its details, k=v, by key.
func (e Event) Words() string {
	if e.Message != "" || len(e.Details) == 0 {
		return OneLine(e.Message)
	}
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, OneLine(fmt.Sprintf("%s=%v", k, e.Details[k])))
	}
	return strings.Join(parts, " ")
}
