package sshx

import "testing"

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Endpoint
		bad  bool
	}{
		{in: "pc2", want: Endpoint{Host: "pc2"}},
		{in: "me@pc2:2222", want: Endpoint{User: "me", Host: "pc2", Port: 2222}},
		{in: "me@[fe80::1]:22", want: Endpoint{User: "me", Host: "fe80::1", Port: 22}},
		{in: "192.168.1.20", want: Endpoint{Host: "192.168.1.20"}},
		{in: "@pc2", bad: true},
		{in: "pc2:99999", bad: true},
		{in: "", bad: true},
		{in: "0]0", bad: true},
		{in: "-oProxyCommand=x", bad: true},
		{in: "pc 2", bad: true},
		{in: "[::1]:2222", want: Endpoint{Host: "::1", Port: 2222}},
	} {
		got, err := ParseEndpoint(c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", c.in, got, err)
		}
	}
}
