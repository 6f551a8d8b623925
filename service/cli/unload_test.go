//go:build !windows

package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
)

// `strata-service unload` (the owner's Unload, POST /v1/server/unload)
// has the running Strata unload its model with the config's key: the
// server keeps answering, the state says the model is unloaded, and the
// next request loads it again. Before the server is ready, and with no
// service at all, it refuses in words that say why.
func TestUnloadGivesTheGPUBackThroughTheOwner(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{APIKey: "sk-unload-test"})
	c, _ := startRun(t, r)
	var since uint64
	follow(t, c, &since, events.ServerReady)

	code, out, errs := cli(t, "unload")
	if code != 0 || !strings.Contains(out, "unloaded its model") {
		t.Fatalf("unload: exit %d\n%s%s", code, out, errs)
	}
	follow(t, c, &since, events.ModelUnloaded)
	st, err := c.State(context.Background())
	if err != nil || st.Server.Unloaded.IsZero() || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the unload: %v %+v", err, st.Server)
	}

	// Stopped: nothing to unload, said as the service's refusal.
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerStopped)
	var se *controlapi.StatusError
	if err := c.Unload(context.Background()); !errors.As(err, &se) || !strings.Contains(se.Message, "no model to unload") {
		t.Errorf("unload of a stopped server: %v", err)
	}
}

// With no service, the in-process owner refuses: there is no server this
// process runs.
func TestUnloadWithoutAServiceSaysSo(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	code, _, errs := cli(t, "unload")
	if code != 1 || !strings.Contains(errs, "not running: start it (strata-service start)") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
