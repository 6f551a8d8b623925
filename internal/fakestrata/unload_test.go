package fakestrata

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

// countingEncoder writes a line to starts each time it starts (READY), and
// ends on QUIT: the test sees the encoder's own starts and ends.
func countingEncoder(t *testing.T, dir string) (exe, starts string) {
	exe, starts = filepath.Join(dir, "enc.sh"), filepath.Join(dir, "starts")
	testenv.WriteExecutable(exe, []byte("#!/bin/sh\necho start >> '"+starts+"'\necho 'strata-vision: on the CPU, 2 threads, no warm-up' >&2\necho READY 2560\n"+
		"while read cmd a b; do [ \"$cmd\" = QUIT ] && { echo quit >> '"+starts+"'; exit 0; }; printf 'SVE1' > \"$b\"; echo OK 4 1 1 5; done\n"))
	return exe, starts
}

func events(t *testing.T, file string) string {
	b, _ := os.ReadFile(file)
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestIdleUnloadLikeStrata: with idle_unload_s the stand-in does what
// server.py does: after N s without a request it says "model unloaded after
// N s idle", ends the engine and the encoder, /health says loaded false;
// the next request (text) starts both again, the encoder first.
func TestIdleUnloadLikeStrata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enc, starts := countingEncoder(t, dir)
	r := NewRoot(t, RootOptions{Extra: map[string]any{"idle_unload_s": 1,
		"vision": map[string]any{"exe": enc, "mmproj": "mm.gguf", "model": "stub.gguf", "gpu": false}}})
	_, lines := start(t, r)
	waitLine(t, lines, "ready: ")
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port)
	if _, h := get(t, base+"/health", ""); h["loaded"] != true {
		t.Fatalf("health after the start: %v", h)
	}
	if l := waitLine(t, lines, "[strata] model unloaded after "); !strings.Contains(l, "after 1 s idle") {
		t.Fatalf("the unload line: %q", l)
	}
	testenv.WaitFor(t, 10*time.Second, "the encoder ended with the unload", func() bool { return events(t, starts) == "start quit" })
	if _, h := get(t, base+"/health", ""); h["loaded"] != false {
		t.Fatalf("health after the unload: %v", h)
	}
	// A text request loads it again: the encoder first, then the engine.
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat after the unload: %d", resp.StatusCode)
	}
	waitLine(t, lines, "[strata] starting the vision encoder")
	waitLine(t, lines, "[strata] the model is loaded")
	if got := events(t, starts); got != "start quit start" {
		t.Fatalf("encoder starts and ends: %q", got)
	}
	if _, h := get(t, base+"/health", ""); h["loaded"] != true {
		t.Fatalf("health after the reload: %v", h)
	}
	// The engine started after the encoder: its cache line follows the
	// encoder's second start line in the engine log.
	testenv.WaitFor(t, 10*time.Second, "the engine's start line after the encoder's at the reload", func() bool {
		logb, _ := os.ReadFile(r.Log)
		log := string(logb)
		last := strings.LastIndex(log, "strata-vision: on the CPU")
		return last >= 0 && strings.Contains(log[last:], "strata generate: expert cache")
	})
}

// TestUnloadOnRequest: POST /v1/unload ends the engine and the encoder and
// says nothing on stdout; /health says loaded false until a request loads it.
func TestUnloadOnRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enc, starts := countingEncoder(t, dir)
	r := NewRoot(t, RootOptions{APIKey: "k", Extra: map[string]any{
		"vision": map[string]any{"exe": enc, "mmproj": "mm.gguf", "model": "stub.gguf", "gpu": false}}})
	_, lines := start(t, r)
	waitLine(t, lines, "ready: ")
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port)
	req, _ := http.NewRequest("POST", base+"/v1/unload", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, h := get(t, base+"/health", ""); resp.StatusCode != 200 || h["loaded"] != false || events(t, starts) != "start quit" {
		t.Fatalf("after POST /v1/unload: %d, health %v, encoder %q", resp.StatusCode, h, events(t, starts))
	}
}

// TestLazyLoadWithVisionRefused: Strata refuses lazy loading with a vision
// block: argparse's error, exit 2, nothing started.
func TestLazyLoadWithVisionRefused(t *testing.T) {
	t.Parallel()
	for _, extra := range []map[string]any{{"lazy_load": true}, {"args": []string{"-m", "model.gguf", "--vision", "--lazy"}}} {
		r := NewRoot(t, RootOptions{Vision: true, Extra: extra})
		cmd, lines := start(t, r)
		if l := waitLine(t, lines, "server.py: error: "); !strings.Contains(l, "lazy loading is text-only; disable vision in the config") {
			t.Fatalf("the refusal: %q", l)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("exit: %v, want code 2", err)
		}
	}
	// Lazy loading without vision: it serves, loaded only after a request.
	r := NewRoot(t, RootOptions{Extra: map[string]any{"lazy_load": true}})
	_, lines := start(t, r)
	waitLine(t, lines, "ready: ")
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port)
	if _, h := get(t, base+"/health", ""); h["loaded"] != false {
		t.Fatalf("a lazy start says loaded: %v", h)
	}
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, h := get(t, base+"/health", ""); h["loaded"] != true {
		t.Fatalf("after a request: %v", h)
	}
}
