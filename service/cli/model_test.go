//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/service/daemon"
)

// runService runs `strata-service run args...` in this process (the
// settings home already set) and returns a client and a stop that waits
// for it to end.
func runService(t *testing.T, args ...string) (*controlapi.Client, *syncBuf, func()) {
	t.Helper()
	out := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	os.Remove(locations.ControlAddrFile())
	go func() {
		done <- Main(ctx, append([]string{"run", "--restart-delay", "50ms", "--stop-timeout", "5s"}, args...), strings.NewReader(""), out, out)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("run exited with %d:\n%s", code, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not stop")
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := controlapi.NewClient(); err == nil {
			if _, err := c.State(ctx); err == nil {
				return c, out, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control API did not come up\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// twoModels is visionRoot's install with a second config, strata-coder.json,
// for another model; both models' files exist.
func twoModels(t *testing.T) (r *fakestrata.Root, coder string) {
	t.Helper()
	r = visionRoot(t)
	raw, _ := os.ReadFile(r.Config)
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["args"] = []string{"-m", "coder.gguf", "--vision", "--vram-reserve-mib", "700"}
	m["model_name"] = "Strata Coder"
	m["log"] = "strata-coder.log"
	b, _ := json.MarshalIndent(m, "", "  ")
	coder = filepath.Join(r.Dir, "strata-coder.json")
	if err := os.WriteFile(coder, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.gguf", "coder.gguf"} {
		os.WriteFile(filepath.Join(r.Dir, f), []byte("GGUF"), 0o644)
	}
	return r, coder
}

func cliRun(args ...string) (int, string) {
	out := &syncBuf{}
	code := Main(context.Background(), args, strings.NewReader(""), out, out)
	return code, out.String()
}

// The check: with two configs, `model` lists both (the running one
// marked); `model use coder` restarts Strata with strata-coder.json, whose
// config then names the relay as the other did; a restarted service (its
// command line naming nothing, or an older one baking --config) keeps it.
func TestModelListAndSwitch(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r, coder := twoModels(t)
	c, _, stop := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if code, out := cliRun("vision", "cpu", "--yes"); code != 0 {
		t.Fatalf("vision cpu: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ServerReady)
	if c1, _ := strataconfig.Read(r.Config); !c1.NamesRelay() {
		t.Fatal("vision cpu did not put the relay into the first config")
	}

	code, out := cliRun("model")
	if code != 0 || !strings.Contains(out, "* test") || !strings.Contains(out, "  coder") || !strings.Contains(out, "Strata Coder") {
		t.Fatalf("model: %d\n%s", code, out)
	}
	l, err := c.Configs(ctx)
	if err != nil || len(l.Configs) != 2 || l.Running != r.Config || !l.Configs[1].Running || !l.Configs[0].Ready || !l.Configs[1].Ready {
		t.Fatalf("GET /v1/configs: %+v %v", l, err)
	}

	code, out = cliRun("model", "use", "coder", "--yes")
	if code != 0 || !strings.Contains(out, "strata-vision-relay") || !strings.Contains(out, "started it with "+coder+"; it is ready") {
		t.Fatalf("model use coder: %d\n%s", code, out)
	}
	seen := follow(t, c, &since, events.ConfigSwitched, events.ServerStarting, events.ServerReady)
	for _, e := range seen {
		if got := events.Get[events.ServerStartingDetails](e).Config; e.Kind == events.ServerStarting && got != coder {
			t.Errorf("Strata started with %v, want %s", got, coder)
		}
	}
	st, _ := c.State(ctx)
	if st.Config.Path != coder || st.Server.Phase != controlapi.PhaseReady || st.Vision.Placement != "cpu" {
		t.Fatalf("after the switch: %+v %+v %+v", st.Config, st.Server, st.Vision)
	}
	if cc, _ := strataconfig.Read(coder); !cc.NamesRelay() {
		t.Fatal("the coder config does not name the relay")
	}
	if s, _ := settings.Load(locations.SettingsFile()); s.ConfigPath != coder {
		t.Fatalf("the settings name %s", s.ConfigPath)
	}
	// A request naming the other file is refused, and changes nothing.
	_, err = c.SetVision(ctx, controlapi.VisionRequest{Placement: "off", Config: r.Config})
	var se *controlapi.StatusError
	if !errorsAs(err, &se) || se.Code != 409 {
		t.Fatalf("vision for the other config: %v", err)
	}
	if _, err := c.SwitchConfig(ctx, controlapi.ConfigRequest{Config: "test", IfRunning: r.Config}); !errorsAs(err, &se) || se.Code != 409 {
		t.Fatalf("a switch meant while another ran: %v", err)
	}
	stop()

	// Restarted with nothing on its command line: the settings say coder.
	c, _, stop = runService(t)
	follow(t, c, new(uint64), events.ServerReady)
	if st, _ := c.State(ctx); st.Config.Path != coder {
		t.Fatalf("a restarted service runs %s", st.Config.Path)
	}
	stop()
	// An older install baked --config into the service's command line: the
	// settings win over it.
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, daemon.Options{StrataRoot: r.Dir, ConfigPath: r.Config, FlagsAreFallback: true, ControlAddr: "127.0.0.1:0", StopTimeout: 5 * time.Second})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err = controlapi.NewClient(); err == nil {
			if st, err := c.State(ctx); err == nil {
				if st.Config.Path != coder {
					t.Fatalf("the baked --config won over the settings: %s", st.Config.Path)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the service did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// While Strata answers a request, a switch asks first: refused (409 busy,
// exit 2 in a script) and nothing changes; with --yes it goes ahead.
func TestModelSwitchAsksWhileARequestRuns(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r, coder := twoModels(t)
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	st, _ := c.State(ctx)
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		body := strings.NewReader(`{"max_tokens": 100000, "messages": [{"role": "user", "content": "hi"}]}`)
		req, _ := http.NewRequestWithContext(reqCtx, "POST", "http://127.0.0.1:"+strconv.Itoa(st.Server.Port)+"/v1/chat/completions", body)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(st.Server.Port) + "/status")
		if err == nil {
			var s struct{ Busy bool }
			json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
			if s.Busy {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never made Strata busy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out := cliRun("model", "use", "coder")
	if code != 2 || !strings.Contains(out, "answering a request") || !strings.Contains(out, "--yes") {
		t.Fatalf("a switch during a request without --yes: %d\n%s", code, out)
	}
	if st, _ := c.State(ctx); st.Config.Path != r.Config || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("the refused switch changed something: %+v %+v", st.Config, st.Server)
	}
	if code, out := cliRun("model", "use", "coder", "--yes"); code != 0 {
		t.Fatalf("model use coder --yes: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ConfigSwitched, events.ServerReady)
	if st, _ := c.State(ctx); st.Config.Path != coder {
		t.Fatalf("runs %s", st.Config.Path)
	}
}

func errorsAs(err error, target **controlapi.StatusError) bool {
	se, ok := err.(*controlapi.StatusError)
	if ok {
		*target = se
	}
	return ok
}

// Issue 26's check: a running service with no install; `vision cpu
// --strata-root R --config C` has the service run R with C (the same path
// a model switch takes), the change made to C; status names C.
func TestVisionWithAnInstallGivesItToABareService(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := visionRoot(t)
	os.WriteFile(filepath.Join(r.Dir, "model.gguf"), []byte("GGUF"), 0o644)
	c, _, _ := runService(t, "--strata-root", t.TempDir())
	ctx := context.Background()
	if st, _ := c.State(ctx); st.Config.Path != "" || st.Server.Phase != controlapi.PhaseFailed {
		t.Fatalf("a service without an install: %+v %+v", st.Config, st.Server)
	}
	var since uint64
	code, out := cliRun("vision", "cpu", "--strata-root", r.Dir, "--config", r.Config, "--yes")
	if code != 0 {
		t.Fatalf("vision cpu --strata-root R --config C: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ConfigSwitched, events.ServerReady)
	st, _ := c.State(ctx)
	if st.Config.Path != r.Config || st.Config.StrataRoot != r.Dir || st.Vision.Placement != "cpu" {
		t.Fatalf("the service runs %+v %+v", st.Config, st.Vision)
	}
	if cc, _ := strataconfig.Read(r.Config); !cc.NamesRelay() {
		t.Fatal("the change was not made to C")
	}
	code, out = cliRun("status")
	if !strings.Contains(out, "Config:     "+r.Config) {
		t.Fatalf("status (%d) does not name C:\n%s", code, out)
	}
}
