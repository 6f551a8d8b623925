package strataconfig

import (
	"regexp"

	"github.com/strata-companion/companion/internal/events"
)

// Redacted replaces a secret's value wherever the companion shows a config.
const Redacted = "<redacted>"

var rePair = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"(\s*:\s*)"((?:[^"\\]|\\.)*)"`)

// SecretKey reports whether a config key holds a secret (api_key, a
// *_token or *_secret in env, a password): its value is never shown. The
// rule is events.SecretName (the control API strips such details from the
// events readers get by the same rule).
func SecretKey(k string) bool { return events.SecretName(k) }

// Redact hides the value of every "secret_key": "value" pair in text (a
// config, a diff of one): the key stays, so a reader still sees that a key
// is set or changed, but not what it is.
func Redact(text string) string {
	return rePair.ReplaceAllStringFunc(text, func(m string) string {
		p := rePair.FindStringSubmatch(m)
		if !SecretKey(p[1]) || p[3] == "" {
			return m
		}
		return `"` + p[1] + `"` + p[2] + `"` + Redacted + `"`
	})
}
