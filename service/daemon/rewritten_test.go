package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// What Strata's setup does to the companion's config, one finding each;
// nothing for a config as the companion left it, or a GPU placement the
// settings chose themselves.
func TestRewrittenFindings(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) *strataconfig.Config {
		p := filepath.Join(dir, "strata-t.json")
		os.WriteFile(p, []byte(body), 0o644)
		c, err := strataconfig.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ours := write(`{"exe": "e", "host": "0.0.0.0", "api_key": "k", "port": 8095, "vision": {"exe": "/opt/c/strata-vision-relay", "gpu": false}}`)
	before := keysOf(ours)
	cpu := &settings.Settings{Vision: settings.PlacementCPU}
	if f := Rewritten(ours, cpu, before); len(f) != 0 {
		t.Errorf("the companion's own config: %v", f)
	}
	theirs := write(`{"exe": "e", "port": 8080, "vision": {"exe": "engine/strata-vision", "gpu": true}}`)
	f := strings.Join(Rewritten(theirs, cpu, before), "\n")
	for _, want := range []string{"relay was replaced by engine/strata-vision", "host went from 0.0.0.0 to 127.0.0.1", "api_key was dropped", "port went from 8095 to 8080"} {
		if !strings.Contains(f, want) {
			t.Errorf("missing %q in:\n%s", want, f)
		}
	}
	if strings.Contains(f, `"k"`) {
		t.Error("the key's value is in the findings")
	}
	// Strata's own CPU encoder where the companion routes pictures to the
	// CPU through its relay (an uninstaller put the old block back): the
	// same place, said once, not "on the CPU, not on the CPU".
	ownCPU := write(`{"exe": "e", "port": 8095, "vision": {"exe": "engine/strata-vision", "gpu": false}}`)
	same := strings.Join(Rewritten(ownCPU, cpu, keysOf(ownCPU)), "\n")
	if !strings.Contains(same, "on this PC's CPU by Strata's own encoder, not through the companion's relay") {
		t.Errorf("the same place by Strata's own encoder: %s", same)
	}
	if f := Rewritten(theirs, &settings.Settings{Vision: settings.PlacementGPU}, keysOf(theirs)); len(f) != 0 {
		t.Errorf("a GPU placement the settings chose: %v", f)
	}
}

// Issue 34: Strata's own encoder with "remote" left in the block (setup
// keeps that key) reads pictures on this PC, and status says so, not "on
// the second PC"; the keys a repair puts back are those setup dropped and
// host, port and api_key it changed.
func TestRewrittenSaysTheRealPlacementAndWhatARepairPutsBack(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "strata-t.json")
	os.WriteFile(p, []byte(`{"exe": "e", "port": 8080, "args": ["-m", "b.gguf"], "vision": {"exe": "engine/strata-vision", "gpu": false, "remote": true}}`), 0o644)
	c, _ := strataconfig.Read(p)
	f := strings.Join(Rewritten(c, &settings.Settings{Vision: settings.PlacementRemote}, configKeys{}), "\n")
	if !strings.Contains(f, "pictures are read on this PC's CPU, not on the second PC") {
		t.Errorf("the real placement is not said: %s", f)
	}
	if pl := backend.Placement(c, &settings.Settings{Vision: settings.PlacementRemote}); pl != settings.PlacementCPU {
		t.Errorf("the state's placement for Strata's own CPU encoder: %s", pl)
	}
	now := map[string]string{"exe": `"e"`, "port": "8080", "args": `["-m", "b.gguf"]`, "vision": "{}"}
	before := map[string]string{"exe": `"e2"`, "port": "18080", "host": `"0.0.0.0"`, "api_key": `"k"`, "args": `["-m", "a.gguf"]`, "draft_vocab": `"d.gguf"`, "vision": "{}"}
	got := strings.Join(restoredKeys(now, before), ",")
	if got != "api_key,draft_vocab,host,port" {
		t.Errorf("keys a repair puts back: %s", got)
	}
}

// Issue 34: an operation asked while another runs is answered at once
// with what runs and since when (never queued to run later).
func TestASecondOperationIsAnsweredAtOnce(t *testing.T) {
	d := &Daemon{}
	done, err := d.beginOp("an update of Strata")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.beginOp("a switch to coder")
	if err == nil || !strings.Contains(err.Error(), "an update of Strata is running since ") {
		t.Fatalf("the second operation: %v", err)
	}
	done()
	done2, err := d.beginOp("a switch to coder")
	if err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
	done2()
}

// The bound a start gets before what ran before is put back follows this
// install's last good start.
func TestStartBoundFollowsTheLastGoodStart(t *testing.T) {
	for _, c := range []struct{ last, want time.Duration }{
		{5 * time.Second, 45 * time.Second},
		{40 * time.Second, 150 * time.Second},
		{5 * time.Minute, 10 * time.Minute},
	} {
		if got := boundFrom(c.last, 10*time.Minute); got != c.want {
			t.Errorf("last start %s: bound %s, want %s", c.last, got, c.want)
		}
	}
}

// The companion's own change of the config (a move off the relay drops
// its env entry) is no loss: neither reported nor put back by a repair.
func TestTheCompanionsOwnWriteIsNoLoss(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "strata-t.json")
	before := `{"exe": "e", "port": 18080, "env": {"STRATA_COMPANION_SETTINGS": "s.json"}, "vision": {"exe": "/c/strata-vision-relay", "gpu": false}}`
	os.WriteFile(p, []byte(before), 0o644)
	c, _ := strataconfig.Read(p)
	r := &running{in: &stratainstall.Install{ConfigInUse: p}}
	k := keysOf(c)
	r.expect.Store(&k)
	backup := p + ".bak-20260101T000000Z"
	os.WriteFile(backup, []byte(before), 0o644)
	os.WriteFile(p, []byte(`{"exe": "e", "port": 18080, "vision": {"exe": "engine/strata-vision", "gpu": true}}`), 0o644)
	c, _ = strataconfig.Read(p)
	now, _ := strataconfig.TopKeys(c.Raw)
	if got := restoredKeys(now, r.expected().top); len(got) != 1 || got[0] != "env" {
		t.Fatalf("before the own write is taken in: %v", got)
	}
	r.ownWrite(backup)
	if got := restoredKeys(now, r.expected().top); len(got) != 0 {
		t.Errorf("the companion's own write is a loss: %v", got)
	}
	if f := Rewritten(c, &settings.Settings{Vision: settings.PlacementGPU}, r.expected()); len(f) != 0 {
		t.Errorf("the companion's own write is reported: %v", f)
	}
}
