//go:build !windows

package agent

import (
	"strings"
	"testing"
)

func TestGateAllowsTheLinkProbe(t *testing.T) {
	self := "/home/u/strata companion/strata-vision-relay"
	dir := "/home/u/strata companion"
	q := quoter(t, "linux")
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{q(self, "probe"), []string{"probe"}},
		{q(self, "probe", "--encoder", "strata-vision", "--file", "mm.gguf", "--file", "v.gguf"),
			[]string{"probe", "--encoder", dir + "/strata-vision", "--file", "mm.gguf", "--file", "v.gguf"}},
		{q(self, "probe", "--encoder", dir+"/bin/strata-vision"), []string{"probe", "--encoder", dir + "/bin/strata-vision"}},
		{q(self, "sink"), []string{"sink"}},
		{q(self, "source", "4194304"), []string{"source", "4194304"}},
		{q(self, "source", "1073741824"), []string{"source", "1073741824"}},
	} {
		got, err := gateCheck(c.cmd, self, nil)
		if err != nil || strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
			t.Errorf("%s:\n got %q %v\nwant %q", c.cmd, got, err, c.want)
		}
	}
	for _, cmd := range []string{
		q(self, "source", "1073741825"), q(self, "source", "99999999999999999999"), q(self, "source", "-5"),
		q(self, "source", "1e9"), q(self, "source"), q(self, "source", "1", "2"),
		q(self, "probe", "--file", "../x"), q(self, "probe", "--file", "a/../../x"), q(self, "probe", "--file", "/etc/passwd"),
		q(self, "probe", "--encoder", "/bin/sh"), q(self, "probe", "--encoder", "../../bin/sh"),
		q(self, "probe", "--nvidia-smi", "/bin/sh"), q(self, "probe", "x"),
		q(self, "sink", "/etc/passwd"),
		q(self, "probe") + "; id", q(self, "sink") + " > /tmp/x", q(self, "source", "10") + " | sh",
	} {
		if got, err := gateCheck(cmd, self, nil); err == nil {
			t.Errorf("%q was allowed: %q", cmd, got)
		}
	}
	// The encoder pinned at pairing, outside the folder, is the only
	// absolute one allowed there.
	pins := gatePins{encoder: "/opt/strata/strata-vision"}
	if got, err := gateCheckWith(q(self, "probe", "--encoder", "/opt/strata/strata-vision"), self, pins); err != nil || got[2] != "/opt/strata/strata-vision" {
		t.Errorf("the pinned encoder: %q %v", got, err)
	}
	if got, err := gateCheckWith(q(self, "probe", "--encoder", "/opt/strata/other"), self, pins); err == nil {
		t.Errorf("another encoder than the pinned one: %q", got)
	}
}
