package live_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/setupflow/live"
)

// tree reads every file under dirs, for byte comparisons.
func tree(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = b
			}
			return nil
		})
	}
	return out
}

func sameTree(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s was removed", p)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s changed:\n%s\n---\n%s", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

// setup makes a real Strata install and companion home, and a flow whose
// finder, config planner and settings are the real ones; the probes and the
// service are stand-ins (no GPU, no OS service here).
func setup(t *testing.T) (*setupflow.Flow, *demo.World, string, string) {
	t.Helper()
	base := t.TempDir()
	root, err := demo.MakeInstall(filepath.Join(base, "Strata"))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "companion")
	os.MkdirAll(home, 0o755)
	w := demo.NewWorld(root)
	d := w.Deps(func(context.Context, setupflow.HostKey) bool { return true })
	settingsPath := filepath.Join(home, "settings.json")
	// CPU and the second PC both go through the relay, which must exist.
	relay := filepath.Join(base, "bin", "strata-vision-relay")
	os.MkdirAll(filepath.Dir(relay), 0o755)
	os.WriteFile(relay, []byte("#!/bin/sh\necho READY 2560\n"), 0o755)
	real := live.Deps(live.Options{SettingsPath: settingsPath, RelayExe: relay})
	d.Finder = live.Finder{SettingsPath: settingsPath, SearchDirs: []string{base}}
	d.Config, d.Settings = real.Config, real.Settings
	f, err := setupflow.New(context.Background(), d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f, w, root, home
}

func walk(t *testing.T, f *setupflow.Flow, p settings.Placement) *setupflow.Review {
	t.Helper()
	ctx := context.Background()
	f.Next()
	if _, err := f.Find.Search(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Choice.Probe(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f.Next()
	if err := f.Choice.Choose(p, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	rv, err := f.Apply.PlanReview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// The check: Cancel at Review leaves every file untouched.
func TestCancelAtReviewLeavesEveryFileUntouched(t *testing.T) {
	f, _, root, home := setup(t)
	before := tree(t, root, home)
	rv := walk(t, f, settings.PlacementCPU)
	if !strings.Contains(rv.Diff, `"gpu": false`) {
		t.Fatalf("the Review diff does not show the change to the CPU:\n%s", rv.Diff)
	}
	f.Apply.SetTrayAtLogin(true)
	res := f.Cancel()
	if res.Changed {
		t.Errorf("Cancel: %v", res.Messages)
	}
	sameTree(t, before, tree(t, root, home))
}

func TestApplyWritesConfigAndSettings(t *testing.T) {
	f, w, root, home := setup(t)
	cfg := filepath.Join(root, "strata-iq2_xs.json")
	old, _ := os.ReadFile(cfg)
	rv := walk(t, f, settings.PlacementCPU)
	f.Next()
	if err := f.Apply.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(cfg)
	if bytes.Equal(now, old) || !strings.Contains(string(now), `"gpu": false`) {
		t.Errorf("config after Apply:\n%s", now)
	}
	if !strings.Contains(rv.Diff, "+") {
		t.Errorf("diff %s", rv.Diff)
	}
	s, err := settings.Load(filepath.Join(home, "settings.json"))
	if err != nil || s.Vision != settings.PlacementCPU || s.ConfigPath != cfg {
		t.Errorf("settings %+v %v", s, err)
	}
	if !w.Running {
		t.Error("the service was not started")
	}
}

// A failure while Strata starts puts the exact old bytes back.
func TestApplyFailureRestoresBytes(t *testing.T) {
	f, w, root, home := setup(t)
	cfg := filepath.Join(root, "strata-iq2_xs.json")
	old, _ := os.ReadFile(cfg)
	walk(t, f, settings.PlacementOff)
	f.Next()
	w.Fail["follow"] = errors.New("the engine stopped (exit code 3)")
	err := f.Apply.Run(context.Background(), nil)
	var ae *setupflow.ApplyError
	if !errors.As(err, &ae) || len(ae.RolledBack) == 0 {
		t.Fatalf("Apply: %v", err)
	}
	if now, _ := os.ReadFile(cfg); !bytes.Equal(now, old) {
		t.Errorf("config not put back:\n%s", now)
	}
	if _, err := os.Stat(filepath.Join(home, "settings.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the new settings file was left behind: %v", err)
	}
	if !strings.Contains(err.Error(), "Put back as it was") {
		t.Errorf("message: %v", err)
	}
}

func TestSuggestionsFromSSHConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	os.WriteFile(p, []byte("Host *\n  ServerAliveInterval 30\n\nHost laptop\n  HostName 192.168.1.20\n  User sam\n  Port 2222\n\nHost nas backup\n  HostName 10.0.0.5\n"), 0o600)
	r := &live.Remote{SSHConfig: p}
	got := r.Suggestions()
	if len(got) != 3 || got[0].Alias != "laptop" || got[0].HostName != "192.168.1.20" || got[0].User != "sam" || got[0].Port != 2222 || got[2].Alias != "backup" {
		t.Errorf("suggestions %+v", got)
	}
}

// A lazy_load config: the Review shows the plan's note that lazy loading is
// turned off (Strata refuses vision with it), beside the diff that does it.
func TestReviewShowsThatLazyLoadingIsTurnedOff(t *testing.T) {
	f, _, root, _ := setup(t)
	cfg := filepath.Join(root, "strata-iq2_xs.json")
	b, _ := os.ReadFile(cfg)
	b = bytes.Replace(b, []byte(`"port": 8080,`), []byte(`"port": 8080,`+"\n  \"lazy_load\": true,"), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rv := walk(t, f, settings.PlacementCPU)
	if !strings.Contains(strings.Join(rv.Notes, "\n"), "lazy_load off") || !strings.Contains(rv.Diff, `+  "lazy_load": false`) {
		t.Fatalf("notes %q, diff:\n%s", rv.Notes, rv.Diff)
	}
}
