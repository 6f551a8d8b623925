package strataconfig

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret's value wherever the companion shows a config.
const Redacted = "<redacted>"

var rePair = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"(\s*:\s*)"((?:[^"\\]|\\.)*)"`)

// SecretKey reports whether a config key holds a secret (api_key, a
// *_token or *_secret in env, a password): its value is never shown.
func SecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"api_key", "apikey", "api-key", "secret", "password", "passwd", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "token" || k == "key" || strings.HasSuffix(k, "_token") || strings.HasSuffix(k, "-token") ||
		strings.HasSuffix(k, "_key") && !strings.HasSuffix(k, "host_key")
}

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
