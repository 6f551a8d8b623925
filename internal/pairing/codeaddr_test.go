package pairing

import "testing"

func TestParseCodeAddress(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port int
		bad  bool
	}{
		{in: "gaming-laptop", host: "gaming-laptop"},
		{in: " 192.168.1.20 ", host: "192.168.1.20"},
		{in: "192.168.1.20:7391", host: "192.168.1.20", port: 7391},
		{in: "[fe80::1]:7390", host: "fe80::1", port: 7390},
		{in: "laptop:ssh", bad: true},
		{in: "laptop:70000", bad: true},
		{in: ":7390", bad: true},
		{in: "  ", bad: true},
	} {
		h, p, err := ParseCodeAddress(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error (host %q port %d)", c.in, h, p)
			}
			continue
		}
		if err != nil || h != c.host || p != c.port {
			t.Errorf("%q: %q %d %v, want %q %d", c.in, h, p, err, c.host, c.port)
		}
	}
}
