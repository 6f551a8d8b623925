//go:build !windows

package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/testenv"
)

// syncBuf is testenv.Buffer (the daemon's goroutines write it).
type syncBuf = testenv.Buffer

// startRun runs `strata-service run` in this process against a fake Strata
// install and returns a client of its control API.
func startRun(t *testing.T, r *fakestrata.Root, extra ...string) (*controlapi.Client, *syncBuf) {
	t.Helper()
	t.Setenv(locations.EnvHome, t.TempDir())
	out := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args := append([]string{"run", "--strata-root", r.Dir, "--config", r.Config, "--restart-delay", "50ms", "--stop-timeout", "5s"}, extra...)
	go func() { done <- Main(ctx, args, strings.NewReader(""), out, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("run exited with %d:\n%s", code, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not stop")
		}
		if _, err := os.Stat(locations.ControlAddrFile()); err == nil {
			t.Error("the control address file was left behind")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := controlapi.NewClient()
		if err == nil {
			return c, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control API did not come up: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// follow long-polls the event stream from since until it sees kind.
func follow(t *testing.T, c *controlapi.Client, since *uint64, kinds ...events.Kind) []events.Event {
	t.Helper()
	var seen []events.Event
	deadline := time.Now().Add(60 * time.Second)
	want := 0
	for want < len(kinds) {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %v; saw %v", kinds, seen)
		}
		r, err := c.Events(context.Background(), *since, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		*since = r.Next
		for _, e := range r.Events {
			seen = append(seen, e)
			if want < len(kinds) && e.Kind == kinds[want] {
				want++
			}
		}
	}
	return seen
}

// The check: starting -> ready in /v1/state; killing the server
// gives exited -> restarting -> ready on /v1/events; no token, 401.
func TestRunAgainstTheStandIn(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Step: "150ms", APIKey: "k"})
	c, out := startRun(t, r)
	ctx := context.Background()

	var phases []string
	var st *controlapi.State
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		st, err = c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(phases) == 0 || phases[len(phases)-1] != st.Server.Phase {
			phases = append(phases, st.Server.Phase)
		}
		if st.Server.Phase == controlapi.PhaseReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("phases %v\n%s", phases, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !contains(phases, controlapi.PhaseStarting) {
		t.Errorf("state went %v, want starting before ready", phases)
	}
	if st.Server.PID == 0 || st.Server.Model != "strata-test" || st.Config.Path != r.Config || st.Service.PID != os.Getpid() {
		t.Errorf("state %+v", st)
	}

	since := st.Seq
	syscall.Kill(st.Server.PID, syscall.SIGKILL)
	seen := follow(t, c, &since, events.ServerExited, events.ServerRestarting, events.ServerReady)
	for _, e := range seen {
		if e.Kind == events.ServerExited && events.Get[events.ServerExitedDetails](e).Expected {
			t.Errorf("the kill was reported as expected: %+v", e)
		}
	}
	st2, _ := c.State(ctx)
	if st2.Server.Phase != controlapi.PhaseReady || st2.Server.Restarts != 1 || st2.Server.PID == st.Server.PID {
		t.Errorf("after the restart: %+v", st2.Server)
	}

	// Without the token: 401.
	resp, err := http.Get(c.BaseURL + "/v1/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", resp.StatusCode)
	}

	// The captured log through the API, and a stop/start through it.
	logs, err := c.Logs(ctx, 50)
	if err != nil || !strings.Contains(strings.Join(logs.Lines, "\n"), "ready: http://127.0.0.1:") {
		t.Errorf("logs: %v %v", err, logs)
	}
	if err := c.Server(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerStopped)
	if st, _ := c.State(ctx); st.Server.Phase != controlapi.PhaseStopped {
		t.Errorf("after stop: %s", st.Server.Phase)
	}
	if err := c.Server(ctx, "start"); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerReady)
}

func TestRunVisionThroughTheAPI(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	c, _ := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	var se *controlapi.StatusError
	if _, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: "moon"}); !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("bad placement: %v", err)
	}
	before, _ := os.ReadFile(r.Config)
	// The fake install has no vision block: asking for "off" changes nothing.
	resp, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: "off", DryRun: true})
	if err != nil || resp.Written {
		t.Fatalf("dry run: %v %+v", err, resp)
	}
	after, _ := os.ReadFile(r.Config)
	if !bytes.Equal(before, after) {
		t.Error("a dry run changed the config")
	}
}

func TestRunWithoutAnInstallStillServes(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := &fakestrata.Root{Dir: t.TempDir()}
	r.Config = r.Dir + "/strata-x.json"
	c, _ := startRun(t, r)
	st, err := c.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Server.Phase != controlapi.PhaseFailed || st.Config.Problem == "" {
		t.Errorf("state %+v", st)
	}
	var se *controlapi.StatusError
	if err := c.Server(context.Background(), "start"); !errors.As(err, &se) || se.Code != 500 {
		t.Errorf("start without an install: %v", err)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// `vision off` while the service runs goes through POST /v1/vision: the
// service writes the config (with a backup) and restarts Strata.
func TestVisionCommandGoesThroughTheService(t *testing.T) {
	dir := t.TempDir()
	enc := dir + "/strata-vision"
	testenv.WriteExecutable(enc, []byte("#!/bin/sh\necho 'strata-vision: on the CPU, 2 threads, no warm-up' >&2\necho READY 2560\nwhile read c a b; do [ \"$c\" = QUIT ] && exit 0; echo 'ERR stand-in'; done\n"))
	for _, f := range []string{"mmproj-Q8_0.gguf", "stub.gguf"} {
		os.WriteFile(dir+"/"+f, []byte("GGUF"), 0o644)
	}
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Extra: map[string]any{
		"args":   []string{"-m", "model.gguf", "--vision", "--vram-reserve-mib", "700"},
		"vision": map[string]any{"exe": enc, "mmproj": dir + "/mmproj-Q8_0.gguf", "model": dir + "/stub.gguf", "gpu": false, "threads": 2},
	}})
	c, _ := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if st, _ := c.State(ctx); st.Vision.Placement != "cpu" {
		t.Fatalf("placement before: %+v", st.Vision)
	}
	out := &syncBuf{}
	if code := Main(ctx, []string{"vision", "off", "--yes"}, strings.NewReader(""), out, out); code != 0 {
		t.Fatalf("vision off: %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "The service saved the config") || !strings.Contains(out.String(), "restarting the Strata server") {
		t.Errorf("vision off said:\n%s", out.String())
	}
	seen := follow(t, c, &since, events.ConfigChanged, events.ServerExited, events.ServerReady)
	for _, e := range seen {
		if e.Kind == events.ServerRestarting {
			t.Errorf("a requested restart counted as a crash: %+v", e)
		}
	}
	st, _ := c.State(ctx)
	if st.Vision.Placement != "off" || st.Server.Phase != controlapi.PhaseReady {
		t.Errorf("after: %+v %+v", st.Vision, st.Server)
	}
	b, _ := os.ReadFile(r.Config)
	if strings.Contains(string(b), `"vision"`) {
		t.Errorf("the config still has vision:\n%s", b)
	}
}
