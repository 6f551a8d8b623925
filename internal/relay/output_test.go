package relay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// TestEveryEventNamesThisRelay: every event the relay reports carries its
// process id in the typed RelayMark (the service folds what the current
// relay saw by it), whichever part of the relay sent it: the link (the
// second PC unreachable), the router (the fallback, the picture's outcome)
// and this PC's encoder (it did not start).
func TestEveryEventNamesThisRelay(t *testing.T) {
	yes := true
	st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "pc"},
		FallbackCPU: &yes, LocalEncoder: filepath.Join(t.TempDir(), "no-such-strata-vision")}
	var mu sync.Mutex
	var got []events.Event
	r := New(Options{
		Settings: func() (*settings.Settings, error) { return st, nil },
		Target: func(settings.Remote) Target {
			return Target{Host: "pc", Dial: func(context.Context, time.Duration) (remote.Conn, error) {
				return nil, errors.New("no route to host")
			}}
		},
		RetryEvery:  time.Hour,
		SlowFailure: -1,
		Report:      func(e events.Event) { mu.Lock(); got = append(got, e); mu.Unlock() },
	})
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, []byte("x"), 0o644)
	reply := r.Encode(context.Background(), img, img+".sve")
	r.Close()
	if !strings.HasPrefix(reply, "ERR ") {
		t.Fatalf("reply %q", reply)
	}
	mu.Lock()
	defer mu.Unlock()
	kinds := map[events.Kind]bool{}
	for _, e := range got {
		kinds[e.Kind] = true
		if c := events.CommonOf(e); c.Relay != os.Getpid() {
			t.Errorf("%s %q names relay %d, want this process %d", e.Kind, e.Message, c.Relay, os.Getpid())
		}
	}
	for _, k := range []events.Kind{events.RemoteUnreachable, events.VisionFallback, events.EncoderFailed, events.PictureEncoded} {
		if !kinds[k] {
			t.Errorf("no %s event; got %v", k, got)
		}
	}
}
