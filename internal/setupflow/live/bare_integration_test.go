package live_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// Issue 26's check, the wizard's half: a service registered before Strata
// was chosen runs with no install; the wizard's Apply for install R and
// config C has the service run R with C (through POST /v1/config, the path
// a model switch takes), the change Review showed is made to C, and the
// service's state names C.
func TestApplyGivesTheChosenInstallToABareService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata-service")
	}
	tmp := t.TempDir()
	svc := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{Tag: "iq2_xs", Extra: map[string]any{"lazy_load": false,
		"vision": map[string]any{"exe": "enc.sh", "mmproj": "mmproj-BF16.gguf", "model": "model-iq2_xs.gguf", "gpu": true}}})
	for _, f := range []string{"model-iq2_xs.gguf", "mmproj-BF16.gguf"} {
		os.WriteFile(filepath.Join(root.Dir, f), []byte("GGUF"), 0o644)
	}
	testenv.WriteExecutable(filepath.Join(root.Dir, "enc.sh"), []byte("#!/bin/sh\necho READY 2560\nwhile read c a b; do [ \"$c\" = QUIT ] && exit 0; echo 'ERR stand-in'; done\n"))
	home := filepath.Join(tmp, "home")
	t.Setenv("STRATA_COMPANION_HOME", home)

	ctx := context.Background()
	runLog := runService(t, svc, "--strata-root", filepath.Join(tmp, "nothing-here"))
	var c *controlapi.Client
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		if c, err = controlapi.NewClient(); err == nil {
			if st, err := c.State(ctx); err == nil {
				if st.Config.Path != "" {
					t.Fatalf("the service found an install: %+v", st.Config)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service did not come up:\n%s", runLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	settingsPath := filepath.Join(home, "settings.json")
	d := wizardDeps(t, svc, root.Dir, root.Config, settingsPath, "")
	defer live.SetOnLocalWrite(func(what string) {
		t.Errorf("the wizard wrote %s itself although the service runs", what)
	})()

	f, err := setupflow.New(ctx, d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Page() == setupflow.PageWelcome {
		f.Next()
		if _, err := f.Find.Search(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Next(); err != nil {
			t.Fatal(err)
		}
	}
	f.Choice.Probe(ctx, nil)
	f.Next()
	if err := f.Choice.Choose(settings.PlacementOff, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	rv, err := f.Apply.PlanReview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rv.ConfigPath != root.Config || rv.Diff == "" {
		t.Fatalf("Review is about %s with diff %q, want %s", rv.ConfigPath, rv.Diff, root.Config)
	}
	f.Next()
	if err := f.Apply.Run(ctx, nil); err != nil {
		t.Fatalf("Apply: %v\nservice:\n%s", err, runLog.String())
	}
	st, err := c.State(ctx)
	if err != nil || st.Config.Path != root.Config || st.Config.StrataRoot != root.Dir || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("the service runs %+v, %+v (%v)", st.Config, st.Server, err)
	}
	b, _ := os.ReadFile(root.Config)
	if !bytes.Contains(b, []byte(`"lazy_load": false`)) {
		t.Fatalf("the config lost a key:\n%s", b)
	}
	s, _ := settings.Load(settingsPath)
	if s.ConfigPath != root.Config || s.Vision != settings.PlacementOff {
		t.Fatalf("settings %+v", s)
	}
	ok, done := f.Apply.Applied()
	if !ok {
		t.Fatal("Applied says no")
	}
	for _, l := range done {
		t.Log("done: " + l)
	}
}

// The rollback of that switch: the service ran install A; the setup's Apply
// for install B fails when B's Strata starts; the service runs A again,
// ready, and B's config has its old bytes back.
func TestApplyFailureGivesTheServiceItsConfigBack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata-service")
	}
	tmp := t.TempDir()
	svc := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
	a := fakestrata.NewRoot(t, fakestrata.RootOptions{Tag: "a"})
	os.WriteFile(filepath.Join(a.Dir, "model-a.gguf"), []byte("GGUF"), 0o644)
	b := fakestrata.NewRoot(t, fakestrata.RootOptions{Tag: "b", Extra: map[string]any{
		"vision": map[string]any{"exe": "enc.sh", "mmproj": "mmproj-BF16.gguf", "model": "model-b.gguf", "gpu": true}}})
	for _, f := range []string{"model-b.gguf", "mmproj-BF16.gguf"} {
		os.WriteFile(filepath.Join(b.Dir, f), []byte("GGUF"), 0o644)
	}
	testenv.WriteExecutable(filepath.Join(b.Dir, "enc.sh"), []byte("#!/bin/sh\necho READY 2560\nwhile read c a b; do [ \"$c\" = QUIT ] && exit 0; echo 'ERR stand-in'; done\n"))
	b.SetMode("fail-start")
	home := filepath.Join(tmp, "home")
	t.Setenv("STRATA_COMPANION_HOME", home)
	ctx := context.Background()
	runLog := runService(t, svc, "--strata-root", a.Dir, "--config", a.Config)
	waitReady(t, runLog)
	c, _ := controlapi.NewClient()
	before, _ := os.ReadFile(b.Config)

	settingsPath := filepath.Join(home, "settings.json")
	d := wizardDeps(t, svc, b.Dir, b.Config, settingsPath, "")
	// The setup run again on this machine (it starts on the placement
	// page), Back to the install page, another install chosen.
	f, err := setupflow.New(ctx, d, setupflow.Options{StartPage: setupflow.PageFindStrata})
	if err != nil {
		t.Fatal(err)
	}
	if f.Page() != setupflow.PageFindStrata {
		t.Fatalf("the setup starts on page %v", f.Page())
	}
	if _, err := f.Find.Search(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	f.Choice.Probe(ctx, nil)
	f.Next()
	if err := f.Choice.Choose(settings.PlacementOff, nil); err != nil {
		t.Fatal(err)
	}
	f.Next()
	if _, err := f.Apply.PlanReview(ctx); err != nil {
		t.Fatal(err)
	}
	f.Next()
	err = f.Apply.Run(ctx, nil)
	var ae *setupflow.ApplyError
	if !errors.As(err, &ae) || ae.Step != "start Strata" {
		t.Fatalf("Apply with B failing to start: %v\n%s", err, runLog.String())
	}
	t.Logf("put back: %v; rollback errors: %v", ae.RolledBack, ae.RollbackErr)
	waitReady(t, runLog)
	st, _ := c.State(ctx)
	if st.Config.Path != a.Config {
		t.Fatalf("after the rollback the service runs %s, want %s", st.Config.Path, a.Config)
	}
	if now, _ := os.ReadFile(b.Config); !bytes.Equal(now, before) {
		t.Errorf("B's config was not put back:\n%s", now)
	}
}
