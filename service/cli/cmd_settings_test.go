//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
)

// A settings file with a newer version's keys at every depth (the top
// level, "remote", "remote.wake") keeps them, values unchanged, through
// `settings --fallback-cpu on` and `settings --wake on --wake-port 7`, both
// when the CLI hosts the backend (no service) and through the running
// service's POST /v1/settings.
func TestSettingsCommandKeepsUnknownKeysAtEveryDepth(t *testing.T) {
	const file = `{"vision":"remote","future_top":{"a":[1,2]},
	  "remote":{"host":"pc2","host_key":"ssh-ed25519 AAAA","future_remote":"r","tunnel":{"mtu":1500},
	    "wake":{"enabled":false,"future_wake":true,"schedule":{"at":"07:00"}}}}`
	for _, withService := range []bool{false, true} {
		name := map[bool]string{false: "no service", true: "through the service"}[withService]
		t.Run(name, func(t *testing.T) {
			if withService {
				startRun(t, fakestrata.NewRoot(t, fakestrata.RootOptions{})) // its own state folder
			} else {
				isolateSettings(t)
			}
			if err := os.MkdirAll(filepath.Dir(locations.SettingsFile()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(locations.SettingsFile(), []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			json.Unmarshal([]byte(file), &want)
			for _, step := range []struct {
				args []string
				edit func(m map[string]any)
			}{
				{[]string{"settings", "--fallback-cpu", "on"}, func(m map[string]any) { m["fallback_cpu"] = true }},
				{[]string{"settings", "--wake", "on", "--wake-port", "7"}, func(m map[string]any) {
					w := m["remote"].(map[string]any)["wake"].(map[string]any)
					w["enabled"], w["port"] = true, 7.0
				}},
			} {
				out := &syncBuf{}
				if code := Main(context.Background(), step.args, strings.NewReader(""), out, out); code != 0 {
					t.Fatalf("%v: exit %d\n%s", step.args, code, out)
				}
				if withService != strings.Contains(out.String(), "The service saved") {
					t.Fatalf("%v (%s) said:\n%s", step.args, name, out)
				}
				step.edit(want)
				b, _ := os.ReadFile(locations.SettingsFile())
				var got map[string]any
				if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, want) {
					wb, _ := json.MarshalIndent(want, "", "  ")
					t.Fatalf("after %v the settings are\n%s\nwant\n%s", step.args, b, wb)
				}
			}
		})
	}
}
