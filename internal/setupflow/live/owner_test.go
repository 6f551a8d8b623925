package live_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/service/controlserver"
	"github.com/strata-companion/companion/service/controltest"
)

// ownerService is the control API with the settings' owner behind it, as
// the service hosts it (vision, settings, the second PC's records).
func ownerService(t *testing.T, b *backend.Backend) *controlapi.Client {
	t.Helper()
	// The real road: the in-process owner over b, served by the real API.
	return controltest.Serve(t, controlserver.Backend{Owner: owner.Over(b)})
}

// The wizard's Apply commits the second PC it paired and prepared (its
// MemoryRecorder's record, another PC than the one recorded) and the CPU
// fallback through the service's API, never writing the settings itself;
// the rollback's removal of a first setup's settings goes through the
// backend too.
func TestWizardSettingsGoThroughTheOwner(t *testing.T) {
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := (&settings.Settings{Remote: &settings.Remote{Host: "pc2", IdleStopS: 60}}).Save(path); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(t.TempDir(), "relay_ed25519")
	// pc3 does not exist: the service's look at its host key stands in
	// (that look is backend's TestSecondPCRecordOfTheCallersMakingIsRefusedIntegration).
	looked := 0
	c := ownerService(t, backend.New(backend.Options{SettingsPath: path, StrataRoot: root.Dir, ConfigPath: root.Config, KeyFile: own,
		CheckHostKey: func(context.Context, sshx.Endpoint, string) error { looked++; return nil }}))
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	hk, _ := ssh.NewPublicKey(pub)
	defer live.SetOnLocalWrite(func(what string) { t.Errorf("the wizard wrote %s itself although the service runs", what) })()
	sf := live.SettingsFile{Path: path, Client: func() (*controlapi.Client, error) { return c, nil }}
	cur, err := (backend.New(backend.Options{SettingsPath: path, ConfigPath: root.Config})).Placement()
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	n := &settings.Settings{StrataRoot: root.Dir, ConfigPath: root.Config, Vision: cur, FallbackCPU: &yes,
		Remote: &settings.Remote{Host: "pc3", User: "me", KeyFile: own, HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk))), RemoteDir: "/home/me/strata-companion", NEmbd: 2560, IdleStopS: 600}}
	if err := sf.Save(n); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if looked != 1 {
		t.Errorf("the service looked at the new PC's host key %d times, want once", looked)
	}
	got, err := settings.Load(path)
	if err != nil || got.Remote == nil || !reflect.DeepEqual(*got.Remote, *n.Remote) || got.FallbackCPU == nil || !*got.FallbackCPU {
		t.Fatalf("settings after Apply: %+v %+v %v", got, got.Remote, err)
	}
	// Rolled back to settings without a second PC: unpaired through the owner.
	n.Remote = nil
	if err := sf.Save(n); err != nil {
		t.Fatal(err)
	}
	if got, _ := settings.Load(path); got.Remote != nil {
		t.Errorf("the second PC is still recorded: %+v", got.Remote)
	}
	if err := sf.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the settings are still there: %v", err)
	}
}
