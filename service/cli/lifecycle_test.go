//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// writeConfig writes a strata-<tag>.json beside r's config: r's own keys,
// changed by edit.
func writeConfig(t *testing.T, from, tag string, edit func(m map[string]any)) string {
	t.Helper()
	raw, _ := os.ReadFile(from)
	var m map[string]any
	json.Unmarshal(raw, &m)
	edit(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	p := filepath.Join(filepath.Dir(from), "strata-"+tag+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// prober asks Strata's /health on port every 0.25 s, as a client would,
// until stop; it returns how long it got no answer in all (a figure for
// the log, never asserted).
func prober(port int) (stop func() time.Duration) {
	quit := make(chan struct{})
	res := make(chan time.Duration, 1)
	go func() {
		var down time.Duration
		cl := &http.Client{Timeout: time.Second}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				res <- down
				return
			case <-tick.C:
			}
			resp, err := cl.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
			if err != nil || resp.StatusCode != 200 {
				down += 250 * time.Millisecond
			}
			if resp != nil {
				resp.Body.Close()
			}
		}
	}()
	return func() time.Duration { close(quit); return <-res }
}

// Issue 34: a switch to a text-only model (a config with no vision block)
// with pictures on the CPU through the relay starts it without vision: no
// --vision, no projector (the previous model's least of all), and the user
// is told pictures are off for it.
func TestSwitchToATextOnlyModelCarriesNoPictures(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := visionRoot(t)
	os.WriteFile(filepath.Join(r.Dir, "model.gguf"), []byte("GGUF"), 0o644)
	os.WriteFile(filepath.Join(r.Dir, "text.gguf"), []byte("GGUF"), 0o644)
	text := writeConfig(t, r.Config, "text", func(m map[string]any) {
		m["args"] = []string{"-m", "text.gguf"}
		m["model_name"] = "Strata Text"
		delete(m, "vision")
	})
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if code, out := cliRun("vision", "cpu", "--yes"); code != 0 {
		t.Fatalf("vision cpu: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ServerReady)

	code, out := cliRun("model", "use", "text", "--yes")
	// Issue 40: the words say why: the projector there is the other model's.
	if code != 0 || !strings.Contains(out, "Pictures are off for Strata Text: no image projector of its own is in") ||
		!strings.Contains(out, "mmproj-BF16.gguf is strata-test.json's") {
		t.Fatalf("model use text: %d\n%s", code, out)
	}
	raw, _ := os.ReadFile(text)
	cc, _ := strataconfig.Read(text)
	if cc.Vision != nil || strings.Contains(string(raw), "mmproj") || strings.Contains(string(raw), "--vision") {
		t.Fatalf("the text-only model was given vision:\n%s", raw)
	}
	st, _ := c.State(context.Background())
	if st.Config.Path != text || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the switch: %+v %+v", st.Config, st.Server)
	}
}

// Issue 40: a switch to a model whose config has no vision block, while
// its own projector is in the install, carries the placement over with that
// projector (never the previous model's), and no word says it has none.
func TestSwitchToAModelWithItsOwnProjectorInTheInstallCarriesPictures(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := visionRoot(t)
	for _, f := range []string{"model.gguf", "text.gguf", "mmproj-text-BF16.gguf"} {
		os.WriteFile(filepath.Join(r.Dir, f), []byte("GGUF"), 0o644)
	}
	text := writeConfig(t, r.Config, "text", func(m map[string]any) {
		m["args"] = []string{"-m", "text.gguf"}
		m["model_name"] = "Strata Text"
		delete(m, "vision")
	})
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if code, out := cliRun("vision", "cpu", "--yes"); code != 0 {
		t.Fatalf("vision cpu: %d\n%s", code, out)
	}
	follow(t, c, &since, events.ServerReady)

	code, out := cliRun("model", "use", "text", "--yes")
	if code != 0 || strings.Contains(out, "Pictures are off") || strings.Contains(out, "projector of its own") {
		t.Fatalf("model use text: %d\n%s", code, out)
	}
	cc, err := strataconfig.Read(text)
	if err != nil || cc.Vision == nil || filepath.Base(cc.Vision.MMProj) != "mmproj-text-BF16.gguf" || !cc.NamesRelay() {
		raw, _ := os.ReadFile(text)
		t.Fatalf("the model did not get its own projector through the relay (%v):\n%s", err, raw)
	}
	st, _ := c.State(context.Background())
	if st.Config.Path != text || st.Server.Phase != controlapi.PhaseReady || st.Vision.Placement != "cpu" {
		t.Fatalf("after the switch: %+v %+v %+v", st.Config, st.Server, st.Vision)
	}
}

// Issue 34: a switch to a config whose port another program holds stops
// the old model, sees the new one cannot start, and starts the old one
// again; the command says so and exits non-zero. Without a terminal and
// without --yes a switch does nothing.
func TestSwitchToAHeldPortBringsTheOldModelBack(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r, _ := twoModels(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := l.Addr().(*net.TCPAddr).Port
	coder := writeConfig(t, filepath.Join(r.Dir, "strata-coder.json"), "coder", func(m map[string]any) { m["port"] = held })
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)

	if code, out := cliRun("model", "use", "coder"); code != 2 || !strings.Contains(out, "--yes") {
		t.Fatalf("a switch with no terminal and no --yes: %d\n%s", code, out)
	}
	if st, _ := c.State(ctx); st.Config.Path != r.Config {
		t.Fatalf("the unconfirmed switch changed the config: %s", st.Config.Path)
	}

	stopProbe := prober(r.Port)
	code, out := cliRun("model", "use", "coder", "--yes")
	t.Logf("text was down for %s during the failed switch and the way back (prober, every 0.25 s)", stopProbe())
	t.Logf("model use coder onto a held port said:\n%s", out)
	if code == 0 || !strings.Contains(out, "The switch failed") || !strings.Contains(out, "port "+strconv.Itoa(held)) || !strings.Contains(out, "started strata-test.json again; it is ready") {
		t.Fatalf("model use coder onto a held port: %d\n%s", code, out)
	}
	st, _ := c.State(ctx)
	if st.Config.Path != r.Config || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("the old model is not back: %+v %+v", st.Config, st.Server)
	}
	if cliOut := func() string { _, o := cliRun("model"); return o }(); !strings.Contains(cliOut, "* test") {
		t.Errorf("model does not mark the old model as running:\n%s", cliOut)
	}
	_ = coder
}

// Issue 34: a new engine that hangs at start is rolled back within a bound
// derived from this install's last good start (recorded), not the fixed
// 10-minute start bound, and the progress says the bound meanwhile.
func TestUpdateRollsBackAnEngineThatHangsWithinTheRecordedBound(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r, _, _ := updatableInstall(t)
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if err := r.SetMode("hang-engine=0.1.44"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	code, out := cliRun("update-strata", "--yes")
	took := time.Since(began)
	t.Logf("the update with a hanging engine ended after %s:\n%s", took.Round(time.Second), out)
	if code == 0 || !strings.Contains(out, "did not get ready within") || !strings.Contains(out, "old engine was put back") || !strings.Contains(out, "if it is not ready within") {
		t.Fatalf("update-strata with a hanging engine: %d\n%s", code, out)
	}
	if took > 5*time.Minute {
		t.Errorf("the rollback waited %s: not a bound from the last start", took)
	}
	st, _ := c.State(ctx)
	if st.Server.Version != "0.1.43" || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the rollback: %+v", st.Server)
	}
}
