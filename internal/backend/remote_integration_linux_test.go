//go:build linux

package backend

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// H1, H2 and the Low item: a second-PC record of the caller's making is
// refused before anything is stored: another key file (root's own key), a
// host key the host does not present (the service looks itself, at a real
// sshd), shell syntax in the folder or encoder, a host, port or user ssh
// would not take as such; and POST /v1/settings takes no record at all. A
// record from pairing (the host's real key, the companion's own key file)
// is stored, with the key file the companion's whatever the caller sent.
func TestSecondPCRecordOfTheCallersMakingIsRefusedIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{})
	dir := t.TempDir()
	own := filepath.Join(dir, "secrets", "relay_ed25519")
	path := filepath.Join(dir, "settings.json")
	b := New(Options{SettingsPath: path, KeyFile: own})
	ctx := context.Background()
	real := settings.Remote{Host: sshd.Host, Port: sshd.Port, User: sshd.User, HostKey: sshd.HostKeyLine(), OS: "linux", Arch: "amd64"}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spub, _ := ssh.NewPublicKey(pub)
	forged := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(spub)))

	refused := func(name, want string, rec controlapi.RemoteRecord) {
		t.Helper()
		before, _ := os.ReadFile(path)
		_, err := b.RecordRemote(ctx, rec)
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a refusal saying %q", name, err, want)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: the settings changed:\n%s", name, after)
		}
	}
	with := func(f func(*settings.Remote)) *settings.Remote { r := real; f(&r); return &r }
	for _, c := range []struct {
		name, want string
		r          *settings.Remote
	}{
		{"root's key", "not the companion's own key", with(func(r *settings.Remote) { r.KeyFile = "/root/.ssh/id_ed25519" })},
		{"a forged host key", "host key could not be confirmed", with(func(r *settings.Remote) { r.HostKey = forged })},
		{"no host key", "needs the host key", with(func(r *settings.Remote) { r.HostKey = "" })},
		{"shell syntax in the folder", "shell syntax", with(func(r *settings.Remote) { r.OS, r.RemoteDir = "windows", "$(id>/tmp/x)" })},
		{"cmd.exe syntax in the folder", "shell syntax", with(func(r *settings.Remote) { r.OS, r.RemoteDir = "windows", `C:\x" & calc & "` })},
		{"shell syntax in the encoder", "shell syntax", with(func(r *settings.Remote) { r.EncoderPath = "`id`" })},
		{"an option as host", "not a host name", with(func(r *settings.Remote) { r.Host = "-oProxyCommand=id" })},
		{"a line break in the host", "not a host name", with(func(r *settings.Remote) { r.Host = "pc2\nforged" })},
		{"a port out of range", "port", with(func(r *settings.Remote) { r.Port = 70000 })},
		{"a user with syntax", "user", with(func(r *settings.Remote) { r.User = "a;id" })},
		{"an unknown OS", "OS", with(func(r *settings.Remote) { r.OS = "plan9" })},
	} {
		refused(c.name+" (pairing)", c.want, controlapi.RemoteRecord{Pairing: c.r})
		refused(c.name+" (replace)", c.want, controlapi.RemoteRecord{Replace: c.r})
	}

	// What pairing records is taken, with the companion's own key.
	got, err := b.RecordRemote(ctx, controlapi.RemoteRecord{Pairing: with(func(r *settings.Remote) { r.KeyFile = "" })})
	if err != nil {
		t.Fatal(err)
	}
	if got.KeyFile != own || got.HostKey != real.HostKey {
		t.Errorf("stored %+v; want key file %s", got, own)
	}
	// Once paired, prepare's folder and encoder are checked too.
	refused("prepare with shell syntax", "shell syntax", controlapi.RemoteRecord{Prepare: &controlapi.RemotePrepared{OS: "linux", RemoteDir: "/home/u/$(id)"}})
	// A record for the same host, port and key needs no new look (the
	// wizard's Apply), but still no other key file.
	sshd.Stop()
	if _, err := b.RecordRemote(ctx, controlapi.RemoteRecord{Replace: with(func(r *settings.Remote) { r.IdleStopS = 60 })}); err != nil {
		t.Errorf("the same PC again: %v", err)
	}
	refused("root's key, same PC", "not the companion's own key", controlapi.RemoteRecord{Replace: with(func(r *settings.Remote) { r.KeyFile = "/root/.ssh/id_ed25519" })})
	// POST /v1/settings takes no record, whatever it holds.
	before, _ := os.ReadFile(path)
	_, err = b.PatchSettings(ctx, controlapi.SettingsPatch{Remote: []byte(`{"host":"` + sshd.Host + `","key_file":"/root/.ssh/id_ed25519"}`)})
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "only from pairing and prepare") {
		t.Errorf("settings with a remote record: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the settings changed:\n%s", after)
	}
}
