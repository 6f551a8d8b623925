//go:build !windows

package agent

import (
	"strings"
	"testing"
)

func TestGateAllowsOnlyTheAgentsOwnWork(t *testing.T) {
	self := "/home/u/strata companion/strata-vision-relay"
	dir := "/home/u/strata companion"
	q := quoter(t, "linux")
	allow := []string{"aa11"}
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{q(self, "agent", "--encoder", dir+"/strata-vision", "--mmproj", dir+"/mm.gguf", "--model", "v.gguf", "--gpu", "--max-tokens", "1024", "--idle-stop", "300"),
			[]string{"agent", "--encoder", dir + "/strata-vision", "--mmproj", dir + "/mm.gguf", "--model", dir + "/v.gguf", "--gpu", "--max-tokens", "1024", "--idle-stop", "300"}},
		{q("strata companion/strata-vision-relay", "agent"), []string{"agent"}},
		{q(self, "agent", "--install-sha256", "aa11"), []string{"agent", "--install-sha256", "aa11"}},
		{"kill -KILL 4242", []string{"kill", "4242"}},
		{q(self, "version"), []string{"version"}},
	} {
		got, err := gateCheck(c.cmd, self, allow)
		if err != nil || strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
			t.Errorf("%s:\n got %q %v\nwant %q", c.cmd, got, err, c.want)
		}
	}
	for _, cmd := range []string{
		"", "id", "sh -c id", "/bin/sh", "echo strata-paired",
		q(self, "agent", "--encoder", "/bin/sh"),              // a program of the caller's choosing
		q(self, "agent", "--encoder", dir+"/../../../bin/sh"), // out of the folder by ..
		q(self, "agent", "--mmproj", "/etc/shadow"),           // read elsewhere
		q(self, "agent", "--dir", "/home/u/.ssh"),             // uploads elsewhere
		q(self, "agent", "--scratch", "/home/u"),              // scratch cleanup elsewhere
		q(self, "agent", "--install-sha256", "bb22"),          // a program not pinned at pairing
		q(self, "authorized-keys", "add", "--line", "-"),      // its own key's restrictions
		q(self, "agent") + "; id", q(self, "agent") + " $(id)", q(self, "agent") + " `id`", q(self, "agent") + " | sh",
		q("/bin/strata-vision-relay-not", "agent"),
		"kill -KILL 1 2", "kill -9 1", "kill -KILL -1", "kill -KILL 0x10",
	} {
		if got, err := gateCheck(cmd, self, allow); err == nil {
			t.Errorf("%q was allowed: %q", cmd, got)
		}
	}
}
