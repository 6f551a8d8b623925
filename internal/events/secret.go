package events

import "strings"

// SecretName reports whether a key (of a config, of an event's details)
// names a secret: api_key, a *_token or *_secret in env, a password, a
// credential. Its value is never shown to readers, nor in a config's diff.
func SecretName(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"api_key", "apikey", "api-key", "secret", "password", "passwd", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "token" || k == "key" || strings.HasSuffix(k, "_token") || strings.HasSuffix(k, "-token") ||
		strings.HasSuffix(k, "_key") && !strings.HasSuffix(k, "host_key")
}
