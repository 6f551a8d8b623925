package secondpc_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/service/controlserver"
	"github.com/strata-companion/companion/service/controltest"
)

// The settings' owner records the second PC as every Recorder must, keeps
// the keys it does not own, and publishes one event per record.
func TestBackendIsARecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := (&settings.Settings{Vision: settings.PlacementCPU}).Save(path); err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	b := backend.New(backend.Options{SettingsPath: path, Publish: func(e events.Event) { evs = append(evs, e) }, CheckHostKey: anyHostKey})
	secondpc.RecorderContract(t, b)
	if st, _ := settings.Load(path); st.Vision != settings.PlacementCPU {
		t.Errorf("the records lost the placement: %+v", st)
	}
	// pair, prepare, pair again, pair another, unpair: five changes.
	if len(evs) != 5 {
		t.Errorf("%d events for five records: %+v", len(evs), evs)
	}
}

// Through the control API (GET/POST /v1/remote) the service's backend
// records the same way.
func TestAPIRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	b := backend.New(backend.Options{SettingsPath: path, CheckHostKey: anyHostKey})
	// The real road: the in-process owner over b, served by the real
	// control API; its client is what the recorder takes.
	c := controltest.Serve(t, controlserver.Backend{Owner: owner.Over(b)})
	secondpc.RecorderContract(t, secondpc.OwnerRecorder{Owner: c})

	// A record that sets two things is refused, and says how.
	_, err := c.RecordRemote(context.Background(), controlapi.RemoteRecord{Unpair: true, Replace: &settings.Remote{Host: "x"}})
	if se, ok := err.(*controlapi.StatusError); !ok || se.Code != 400 {
		t.Errorf("two records in one: %v", err)
	}
}

// anyHostKey stands in for the service's look at the host (pc2 and pc3 do
// not exist): these tests are about how records are kept; the look itself
// is backend's TestSecondPCRecordOfTheCallersMakingIsRefusedIntegration, at a real sshd.
func anyHostKey(context.Context, sshx.Endpoint, string) error { return nil }
