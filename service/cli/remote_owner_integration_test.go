//go:build linux

package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// With a running service, `remote pair`, `prepare`, `idle-stop` and
// `unpair` leave the settings to the service: this process never hosts the
// backend, and every replacement of settings.json the inotify watch sees
// is matched by a settings.changed event the service published after its
// own write.
func TestRemoteRecordsOnlyThroughTheServiceIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and starts a real sshd")
	}
	bins := relayBins(t)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	c, _ := startRun(t, r)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	ctx := context.Background()
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	since := st.Seq
	local := 0
	onLocalOwner = func() { local++ }
	t.Cleanup(func() { onLocalOwner = func() {} })
	dir, err := locations.EnsureDir(locations.ConfigDir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(locations.SettingsFile()) != dir {
		t.Fatalf("the settings %s are not in %s", locations.SettingsFile(), dir)
	}
	watch := watchDir(t, dir)

	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeSMIDir(t)}})
	target := s.User + "@" + s.Addr()
	fp := ssh.FingerprintSHA256(s.HostSigner.PublicKey())
	mm, model := filepath.Join(bins, "mmproj.gguf"), filepath.Join(bins, "m-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(mm, 48)
	fakeencoder.WriteModel(model, 30)
	remoteDir := filepath.Join(t.TempDir(), "pc2")

	var seen []events.Event
	steps := []struct {
		args  []string
		check func(*settings.Remote) bool
	}{
		// Agent-only (the default): the agent goes in with the user's login,
		// and the stand-in encoder is allowed for prepare to install.
		{[]string{"remote", "pair", target, "--identity", s.ClientKeyFile, "--accept-host-key", fp, "--authorized-keys", s.AuthorizedKeysFile,
			"--agent-binary", filepath.Join(bins, "strata-vision-relay"), "--remote-dir", remoteDir, "--allow-encoder", filepath.Join(bins, "standin")},
			func(r *settings.Remote) bool {
				return r != nil && r.Host == s.Host && r.KeyFile == locations.RelayKeyFile()
			}},
		{[]string{"remote", "prepare", "--mmproj", mm, "--model", model, "--agent-binary", filepath.Join(bins, "strata-vision-relay"),
			"--local-encoder", filepath.Join(bins, "standin"), "--remote-dir", remoteDir, "--max-tokens", "4"},
			func(r *settings.Remote) bool { return r != nil && r.NEmbd == 48 && r.RemoteDir == remoteDir }},
		{[]string{"remote", "idle-stop", "5m"}, func(r *settings.Remote) bool { return r != nil && r.IdleStopS == 300 && r.NEmbd == 48 }},
		{[]string{"remote", "unpair", "--authorized-keys", s.AuthorizedKeysFile}, func(r *settings.Remote) bool { return r == nil }},
	}
	for _, step := range steps {
		out, errOut, code := remoteCLI(t, "", step.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(step.args[:2], " "), code, out, errOut)
		}
		seen = append(seen, follow(t, c, &since, backend.SettingsChanged)...)
		got, err := settings.Load(locations.SettingsFile())
		if err != nil || !step.check(got.Remote) {
			t.Fatalf("settings after %s: %+v %v", strings.Join(step.args[:2], " "), got.Remote, err)
		}
	}
	// Whatever else the service published by now.
	if rest, err := c.Events(ctx, since, 100*time.Millisecond); err == nil {
		seen = append(seen, rest.Events...)
	}
	if local != 0 {
		t.Errorf("the CLI hosted the backend itself %d times while the service ran", local)
	}
	changed := 0
	for _, e := range seen {
		if e.Kind == backend.SettingsChanged {
			changed++
		}
	}
	renames := 0
	for _, n := range watch() {
		if n == filepath.Base(locations.SettingsFile()) {
			renames++
		}
	}
	if changed < len(steps) || renames != changed {
		t.Errorf("settings.json was replaced %d times; the service published %d settings changes (want one per write, at least %d)", renames, changed, len(steps))
	}
	t.Logf("%d writes of the settings, all by the service", renames)
}
