//go:build !windows

package supervisor

import (
	"context"
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
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/service/state"
)

// fold is the service's state from every event so far, as its tracker
// folds them.
func (h *harness) fold(placement string) controlapi.State {
	st := controlapi.State{Vision: controlapi.VisionState{Placement: placement, Encoder: controlapi.EncoderUnknown}}
	evs, _ := h.bus.Since(0)
	for _, e := range evs {
		if e.Seq > h.next {
			break
		}
		state.Fold(&st, e)
	}
	return st
}

func post(t *testing.T, url, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestIdleUnloadAndReload: the stand-in Strata with idle_unload_s unloads
// its model (its line; engine and encoder ended); the state says the
// encoder is unloaded with the model, with no VRAM line; a text request
// reloads both, the encoder first, and the state shows the encoder starting
// only until it started, then ready, with the model loaded again.
func TestIdleUnloadAndReload(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Vision: true, Extra: map[string]any{"idle_unload_s": 2}}, func(c *Config) {
		c.CalmHealthEvery = 300 * time.Millisecond
	})
	h.waitFor(events.ServerReady)
	if st := h.fold("gpu"); st.Vision.Encoder != controlapi.EncoderReady {
		t.Fatalf("after the start the encoder is %q", st.Vision.Encoder)
	}
	un := h.waitFor(events.ModelUnloaded)
	st := h.fold("gpu")
	t.Logf("after %q: encoder %q, server %+v", un.Message, st.EncoderText(func(t time.Time) string { return t.Format(time.TimeOnly) }), st.Server.Detail)
	if st.Vision.Encoder != controlapi.EncoderUnloaded || st.Vision.EncoderHoldsVRAM() || st.Server.Unloaded.IsZero() {
		t.Fatalf("after the unload: %+v", st.Vision)
	}
	t0 := time.Now()
	if code := post(t, "http://127.0.0.1:"+strconv.Itoa(h.root.Port)+"/v1/chat/completions", "", `{"messages":[]}`); code != 200 {
		t.Fatalf("chat after the unload: %d", code)
	}
	h.waitFor(events.EncoderStarting)
	loaded := h.waitFor(events.ModelLoaded)
	t.Logf("the reload was seen %v after the request", time.Since(t0))
	st = h.fold("gpu")
	if st.Vision.Encoder != controlapi.EncoderReady || !st.Server.Unloaded.IsZero() {
		t.Fatalf("after %q: %+v / unloaded %v", loaded.Message, st.Vision, st.Server.Unloaded)
	}
	for _, k := range h.kinds() {
		if k == string(events.ServerExited) || k == string(events.EncoderFailed) {
			t.Fatalf("the unload read as a failure: %v", h.kinds())
		}
	}
}

// TestUnloadOnRequestSeenOnHealth: POST /v1/unload prints no line; the
// health poll sees loaded false, and the reload (POST /v1/load) is followed
// at the start's pace until loaded.
func TestUnloadOnRequestSeenOnHealth(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Vision: true, APIKey: "k"}, func(c *Config) {
		c.CalmHealthEvery = 300 * time.Millisecond
	})
	h.waitFor(events.ServerReady)
	base := "http://127.0.0.1:" + strconv.Itoa(h.root.Port)
	if code := post(t, base+"/v1/unload", "k", ""); code != 200 {
		t.Fatalf("unload: %d", code)
	}
	if e := h.waitFor(events.ModelUnloaded); events.Get[events.ModelUnloadedDetails](e).Source.Source != "health" {
		t.Fatalf("unload event: %+v", e)
	}
	if st := h.fold("gpu"); st.Vision.Encoder != controlapi.EncoderUnloaded {
		t.Fatalf("after the unload: %+v", st.Vision)
	}
	if code := post(t, base+"/v1/load", "k", ""); code != 200 {
		t.Fatalf("load: %d", code)
	}
	h.waitFor(events.ModelLoaded)
	if st := h.fold("gpu"); st.Vision.Encoder != controlapi.EncoderReady {
		t.Fatalf("after the load: %+v", st.Vision)
	}
}

// TestLazyWithVisionIsNotACrashLoop: Strata refuses lazy loading with
// vision (exit 2 with its reason). The service does not restart it five
// times: it gives up at once, and the reason it gives is Strata's own words
// with the fix, for the owner (the failed state's message), not only the
// operators' last lines.
func TestLazyWithVisionIsNotACrashLoop(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Vision: true, Extra: map[string]any{"lazy_load": true}}, nil)
	exited := h.waitFor(events.ServerExited)
	if !strings.Contains(exited.Message, "lazy loading is text-only; disable vision in the config") {
		t.Errorf("the exit does not carry Strata's last words: %q", exited.Message)
	}
	failed := h.waitFor(events.ServerFailed)
	t.Logf("failed: %s", failed.Message)
	for _, w := range []string{"Strata refused to start", "lazy loading is text-only", "turns lazy loading off", "does not restart"} {
		if !strings.Contains(failed.Message, w) {
			t.Errorf("the failure does not say %q: %q", w, failed.Message)
		}
	}
	st := h.fold("gpu")
	if st.Server.Phase != controlapi.PhaseFailed || !strings.Contains(st.Server.LastError, "lazy loading is text-only") || st.Server.Restarts != 0 {
		t.Errorf("state: %+v", st.Server)
	}
	for _, k := range h.kinds() {
		if k == string(events.ServerRestarting) {
			t.Fatalf("restarted a config a restart cannot fix: %v", h.kinds())
		}
	}
}

func TestLastWordsOf(t *testing.T) {
	for in, want := range map[string]string{
		"server.py: error: lazy loading is text-only; disable vision in the config": "lazy loading is text-only; disable vision in the config",
		"[strata] error: the engine did not start (exit code 1)":                    "error: the engine did not start (exit code 1)",
		"RuntimeError: stand-in crash":                                              "RuntimeError: stand-in crash",
		"  File \"serve/server.py\", line 1, in <module>":                           "",
		"Traceback (most recent call last):":                                        "",
		"usage: server.py [-h]":                                                     "",
		"":                                                                          "",
	} {
		got, ok := lastWordsOf(in)
		if got != want || ok != (want != "") {
			t.Errorf("lastWordsOf(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

// TestRelaySecretReachesOnlyTheServersEncoder: each start hands its Strata
// a new secret in the environment, which Strata passes to its encoder (the
// relay); StartedRelay admits that one only, and nothing after the server
// ended.
func TestRelaySecretReachesOnlyTheServersEncoder(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "secret")
	enc := filepath.Join(dir, "enc.sh")
	testenv.WriteExecutable(enc, []byte("#!/bin/sh\nprintf '%s' \"$"+controlapi.EnvRelaySecret+"\" > '"+seen+"'\necho READY 2560\nwhile read c a b; do [ \"$c\" = QUIT ] && exit 0; echo 'ERR stand-in'; done\n"))
	h := newHarness(t, fakestrata.RootOptions{Extra: map[string]any{
		"vision": map[string]any{"exe": enc, "mmproj": "mm.gguf", "model": "stub.gguf", "gpu": false}}}, nil)
	h.waitFor(events.ServerReady)
	b, err := os.ReadFile(seen)
	secret := string(b)
	if err != nil || len(secret) != 64 {
		t.Fatalf("the encoder's environment has no secret: %q %v", secret, err)
	}
	if !h.sup.StartedRelay(secret) || h.sup.StartedRelay("") || h.sup.StartedRelay(strings.Repeat("0", 64)) {
		t.Fatal("StartedRelay does not admit exactly the server's secret")
	}
	if log, _ := os.ReadFile(h.sup.LogFile()); strings.Contains(string(log), secret) {
		t.Fatal("the secret is in the service's log")
	}
	if err := h.sup.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitFor(events.ServerExited)
	h.waitFor(events.ServerReady)
	if h.sup.StartedRelay(secret) {
		t.Fatal("the previous start's relay is still admitted")
	}
}
