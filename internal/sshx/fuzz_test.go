package sshx

import (
	"strings"
	"testing"
)

// FuzzParseEndpoint: whatever is typed, ParseEndpoint never panics, and what
// it accepts prints back to something it parses to the same endpoint.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"pc2", "me@pc2:2222", "me@[fe80::1]:22", "a@b@c", "[::1]", "host:0", " x ", "@", ":22"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if ep.Host == "" || strings.ContainsAny(ep.Host, " /\\") || ep.Port < 0 || ep.Port > 65535 {
			t.Fatalf("ParseEndpoint(%q) accepted %+v", s, ep)
		}
		back, err := ParseEndpoint(ep.User + "@" + ep.Addr())
		if ep.User == "" {
			back, err = ParseEndpoint(ep.Addr())
		}
		if err != nil || back.Host != ep.Host || back.User != ep.User {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, ep, ep.Addr(), back, err)
		}
	})
}
