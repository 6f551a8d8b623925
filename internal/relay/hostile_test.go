package relay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// H1 and the Low item on addresses: a second-PC record with shell syntax in
// its folder (the finding: "os": "windows" and "remote_dir": "$(id>/tmp/x)",
// which the second PC's sh expanded), or a host that is not one, is never
// dialed, woken or run: the picture gets one ERR line saying to pair again.
func TestHostileRecordIsNeverUsed(t *testing.T) {
	img := filepath.Join(t.TempDir(), "p.img")
	if err := os.WriteFile(img, []byte("picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rm := range []settings.Remote{
		{Host: "pc2", OS: "windows", RemoteDir: "$(id>/tmp/x)"},
		{Host: "pc2", OS: "linux", RemoteDir: "sv", EncoderPath: "`id`"},
		{Host: "pc2", OS: "windows", RemoteDir: `C:\x" & calc & "`},
		{Host: "-oProxyCommand=id", OS: "linux"},
		{Host: "pc2\nforged log line"},
		{Host: "pc2", Wake: &settings.Wake{Enabled: true, Broadcast: "127.0.0.1"}, MAC: "aa:bb:cc:dd:ee:ff"},
	} {
		var targeted, dialed atomic.Int32
		st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &rm}
		r := New(Options{
			Settings: func() (*settings.Settings, error) { return st, nil },
			Target: func(settings.Remote) Target {
				targeted.Add(1)
				return Target{Host: rm.Host, Dial: func(context.Context, time.Duration) (remote.Conn, error) {
					dialed.Add(1)
					return nil, context.Canceled
				}}
			},
			Dial: func(context.Context, time.Duration) (remote.Conn, error) { dialed.Add(1); return nil, context.Canceled },
		})
		reply := r.Encode(context.Background(), img, img+".sve")
		r.Close()
		if !strings.HasPrefix(reply, "ERR the second PC in the companion settings cannot be used") || strings.Contains(reply, "\n") {
			t.Errorf("%+v: reply %q", rm, reply)
		}
		if targeted.Load() != 0 || dialed.Load() != 0 {
			t.Errorf("%+v: the record was used (target %d, dial %d)", rm, targeted.Load(), dialed.Load())
		}
	}
}

// The agent's command line is never built from a folder with shell syntax,
// whichever OS the settings claim.
func TestAgentCommandRefusesShellSyntax(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, dir := range []string{"$(id>/tmp/x)", `C:\x" & calc & "`, "a;id", "%COMSPEC%"} {
			if cmd, err := (remote.AgentArgs{OS: goos, RemoteDir: dir, Encoder: "strata-vision", Mmproj: "m.gguf", Model: "v.gguf"}).Command(); err == nil {
				t.Errorf("%s %q: command %q built", goos, dir, cmd)
			}
		}
	}
}
