//go:build linux

package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// The check, through the running service and its control API, with
// the strongest credential there is (this test runs as root where CI does):
// a second-PC record with a key file, a host key or shell syntax of the
// caller's making is refused (400, the settings unchanged), and POST
// /v1/settings takes no record at all. What pairing records is taken.
func TestCallersSecondPCRecordRefusedEvenFromRootIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the service and a real sshd")
	}
	c, _ := startRun(t, fakestrata.NewRoot(t, fakestrata.RootOptions{}))
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{})
	ctx := context.Background()
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	fk, _ := ssh.NewPublicKey(pub)
	forged := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(fk)))
	real := settings.Remote{Host: sshd.Host, Port: sshd.Port, User: sshd.User, HostKey: sshd.HostKeyLine(), OS: "linux"}
	with := func(f func(*settings.Remote)) *settings.Remote { r := real; f(&r); return &r }
	refused := func(what string, call func() error) {
		t.Helper()
		before, _ := os.ReadFile(locations.SettingsFile())
		err := call()
		var se *controlapi.StatusError
		if !errors.As(err, &se) || se.Code != 400 {
			t.Errorf("%s: %v; want 400", what, err)
		}
		if after, _ := os.ReadFile(locations.SettingsFile()); !bytes.Equal(before, after) {
			t.Errorf("%s: the settings changed", what)
		}
	}
	for name, r := range map[string]*settings.Remote{
		"root's own key":    with(func(r *settings.Remote) { r.KeyFile = "/root/.ssh/id_ed25519" }),
		"a forged host key": with(func(r *settings.Remote) { r.HostKey = forged }),
		"shell syntax":      with(func(r *settings.Remote) { r.OS, r.RemoteDir = "windows", "$(id>/tmp/x)" }),
	} {
		refused(name+" as pairing", func() error { _, err := c.RecordRemote(ctx, controlapi.RemoteRecord{Pairing: r}); return err })
		refused(name+" as replace", func() error { _, err := c.RecordRemote(ctx, controlapi.RemoteRecord{Replace: r}); return err })
	}
	refused("a record in POST /v1/settings", func() error {
		_, err := c.PatchSettings(ctx, controlapi.SettingsPatch{Remote: []byte(`{"host":"` + sshd.Host + `","key_file":"/root/.ssh/id_ed25519"}`)})
		return err
	})
	got, err := c.RecordRemote(ctx, controlapi.RemoteRecord{Pairing: &real})
	if err != nil {
		t.Fatalf("the record pairing makes: %v", err)
	}
	if got.KeyFile != locations.RelayKeyFile() {
		t.Errorf("key file %q, want the companion's own %s", got.KeyFile, locations.RelayKeyFile())
	}
}
