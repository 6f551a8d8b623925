//go:build linux

package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

func isolateSettings(t *testing.T) {
	home := t.TempDir()
	t.Setenv(locations.EnvHome, filepath.Join(home, "companion"))
	t.Setenv("HOME", home)
}

// With no service running, idle-stop writes the settings file.
func TestRemoteIdleStopWithoutService(t *testing.T) {
	isolateSettings(t)
	if _, errOut, code := remoteCLI(t, "", "remote", "idle-stop", "600"); code != 1 || !strings.Contains(errOut, "remote pair") {
		t.Fatalf("before pairing: exit %d: %s", code, errOut)
	}
	if err := (&settings.Settings{Remote: &settings.Remote{Host: "pc2", HostKey: "k"}}).Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg  string
		want int
		code int
	}{{"10m", 600, 0}, {"90", 90, 0}, {"off", 0, 0}, {"45s", 45, 0}, {"soon", 45, 2}, {"-5", 45, 2}, {"1.5s", 45, 2}, {"9999h", 45, 2}} {
		out, errOut, code := remoteCLI(t, "", "remote", "idle-stop", tc.arg)
		if code != tc.code {
			t.Errorf("idle-stop %s: exit %d, want %d\n%s%s", tc.arg, code, tc.code, out, errOut)
		}
		st, err := settings.Load(locations.SettingsFile())
		if err != nil || st.Remote.IdleStopS != tc.want || st.Remote.Host != "pc2" {
			t.Errorf("idle-stop %s: settings %+v %v, want idle_stop_s %d", tc.arg, st.Remote, err, tc.want)
		}
	}
}

// With the service running, idle-stop goes through POST /v1/settings and
// leaves the settings file to the service. The service is a stand-in here
// (the real endpoint is the backend's, issue 13 part A).
func TestRemoteIdleStopThroughTheService(t *testing.T) {
	isolateSettings(t)
	var mu sync.Mutex
	var patches []controlapi.SettingsPatch
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/state":
		case "POST /v1/settings":
			var p controlapi.SettingsPatch
			json.NewDecoder(r.Body).Decode(&p)
			mu.Lock()
			patches = append(patches, p)
			mu.Unlock()
		default:
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(controlapi.State{})
	}))
	defer srv.Close()
	os.MkdirAll(filepath.Dir(locations.ControlAddrFile()), 0o700)
	os.WriteFile(locations.ControlAddrFile(), []byte(strings.TrimPrefix(srv.URL, "http://")), 0o600)
	os.WriteFile(locations.ControlTokenFile(), []byte("tok"), 0o600)

	out, errOut, code := remoteCLI(t, "", "remote", "idle-stop", "5m")
	if code != 0 || !strings.Contains(out, "through the running service") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(patches) != 1 || patches[0].IdleStopS == nil || *patches[0].IdleStopS != 300 || patches[0].FallbackCPU != nil || patches[0].Wake != nil {
		t.Errorf("patches sent: %+v", patches)
	}
	if _, err := os.Stat(locations.SettingsFile()); !os.IsNotExist(err) {
		t.Errorf("the CLI wrote the settings file itself: %v", err)
	}
}

// Issue 16: each remote subcommand's help shows its own usage and flags,
// once, on stdout, with exit 0.
func TestRemoteHelpPerSubcommand(t *testing.T) {
	isolateSettings(t)
	for _, tc := range []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"remote", "--help"}, []string{"remote pair [user@]host[:port]", "remote prepare [--mmproj FILE", "(the paired PC; no host)", "remote idle-stop <seconds>"}, []string{"-forced-command"}},
		{[]string{"remote", "prepare", "--help"}, []string{"Usage: strata-service remote prepare [", "-mmproj", "-agent-binary"}, []string{"[user@]host", "-forced-command", "-identity"}},
		{[]string{"remote", "pair", "-h"}, []string{"Usage: strata-service remote pair [user@]host[:port]", "-forced-command", "-identity", "-agent-binary", "-shell-key", "weaker", "-encoder"}, []string{"-mmproj", "-force\n"}},
		{[]string{"remote", "unpair", "--help"}, []string{"remote unpair [[user@]host[:port]] [--force]", "-force", "-agent-binary"}, []string{"-mmproj", "-forced-command"}},
		{[]string{"remote", "idle-stop", "--help"}, []string{"remote idle-stop <seconds>"}, []string{"-mmproj", "-identity"}},
	} {
		out, errOut, code := remoteCLI(t, "", tc.args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%v: %q does not belong in\n%s", tc.args, w, out)
			}
		}
	}
}
