package secondpc

import (
	"testing"

	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/settings"
)

// The paired record gives the probe the agent's path and OS, so that a
// probe through an agent-only key knows what to ask and how to quote it.
func TestPairedProbeOptionsNameTheAgent(t *testing.T) {
	for _, c := range []struct {
		rm        settings.Remote
		agent, os string
	}{
		{settings.Remote{RemoteDir: "/home/me/strata companion", OS: "linux"}, "/home/me/strata companion/strata-vision-relay", "linux"},
		{settings.Remote{RemoteDir: `C:\Users\me\Strata Vision`, OS: "windows"}, `C:\Users\me\Strata Vision\strata-vision-relay.exe`, "windows"},
		{settings.Remote{RemoteDir: `C:\Users\me\Strata Vision`}, `C:\Users\me\Strata Vision\strata-vision-relay.exe`, "windows"},
		{settings.Remote{}, "", ""},
	} {
		o := PairedProbeOptions(linkprobe.Options{}, &c.rm)
		if o.Agent != c.agent || o.AgentOS != c.os || o.RemoteDir != c.rm.RemoteDir {
			t.Errorf("%+v: agent %q os %q dir %q; want %q %q", c.rm, o.Agent, o.AgentOS, o.RemoteDir, c.agent, c.os)
		}
	}
	// A folder the user named wins for the file checks; the agent stays where pairing put it.
	o := PairedProbeOptions(linkprobe.Options{RemoteDir: "/elsewhere"}, &settings.Remote{RemoteDir: "/home/me/sc", OS: "linux", EncoderPath: "/opt/sv"})
	if o.RemoteDir != "/elsewhere" || o.Agent != "/home/me/sc/strata-vision-relay" || o.EncoderPath != "/opt/sv" {
		t.Errorf("%+v", o)
	}
	if o := PairedProbeOptions(linkprobe.Options{RemoteDir: "/x"}, nil); o.RemoteDir != "/x" || o.Agent != "" {
		t.Errorf("no record: %+v", o)
	}
}
