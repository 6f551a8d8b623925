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

// Without is e with a copy of its details that holds none of the keys
// named, and none named like a secret (SecretName): what a reader of the
// control API may see of an event. e itself is not changed.
func (e Event) Without(keys ...string) Event {
	if len(e.Details) == 0 {
		return e
	}
	drop := func(k string) bool {
		if SecretName(k) {
			return true
		}
		for _, x := range keys {
			if k == x {
				return true
			}
		}
		return false
	}
	changed := false
	for k := range e.Details {
		if drop(k) {
			changed = true
			break
		}
	}
	if !changed {
		return e
	}
	d := make(map[string]any, len(e.Details))
	for k, v := range e.Details {
		if !drop(k) {
			d[k] = v
		}
	}
	e.Details = d
	return e
}
