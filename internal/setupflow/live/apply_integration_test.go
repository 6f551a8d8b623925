package live_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// The whole flow against the real supervisor (`strata-service run`) and its
// control API, with Strata's stand-in: the wizard writes the config with the
// real planner, restarts Strata through the API, follows its start until
// ready; and when the new start fails, the config's exact bytes and the old
// server come back. Only `strata-service install` is replaced (it would
// install a real OS service on this machine).
func TestApplyAgainstTheRealSupervisor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata-service")
	}
	tmp := t.TempDir()
	svc := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Name: "strata-service"})
	enc := testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{Tag: "iq2_xs", Extra: map[string]any{
		"vision": map[string]any{"exe": enc, "mmproj": "mmproj-BF16.gguf", "model": "model-00001-of-00002.gguf", "gpu": true, "max_tokens": 1024},
	}})
	if err := fakeencoder.WriteMmproj(filepath.Join(root.Dir, "mmproj-BF16.gguf"), 2560); err != nil {
		t.Fatal(err)
	}
	if err := fakeencoder.WriteModel(filepath.Join(root.Dir, "model-00001-of-00002.gguf"), 100); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root.Dir, "engine", "strata"), nil, 0o755)
	home := filepath.Join(tmp, "home")
	t.Setenv("STRATA_COMPANION_HOME", home)

	// The supervisor, in the foreground, as `strata-service run`.
	ctx := context.Background()
	runLog := runService(t, svc, "--strata-root", root.Dir, "--config", root.Config)
	waitReady(t, runLog)

	// strata-service with a recording `install` (no OS service here).
	calls := filepath.Join(tmp, "calls")
	settingsPath := filepath.Join(home, "settings.json")
	d := wizardDeps(t, svc, root.Dir, root.Config, settingsPath, calls)

	walkTo := func(p settings.Placement) *setupflow.Flow {
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
			f.Choice.Probe(ctx, nil)
			f.Next()
		} else {
			f.Choice.Probe(ctx, nil)
		}
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
		if !strings.Contains(rv.Service[0], "running") {
			t.Errorf("the running service was not seen: %v", rv.Service)
		}
		f.Next()
		return f
	}

	// With the service running, the wizard never writes the config or the
	// settings itself: every change goes through the control API.
	defer live.SetOnLocalWrite(func(what string) {
		t.Errorf("the wizard wrote %s itself although the service runs", what)
	})()
	configWrites := watchRenames(t, root.Dir, filepath.Base(root.Config))

	// 1. Off: written, Strata restarted through the API, followed to ready.
	f := walkTo(settings.PlacementOff)
	var lines []string
	if err := f.Apply.Run(ctx, func(p setupflow.Progress) {
		if p.LogLine != "" {
			lines = append(lines, p.LogLine)
		}
	}); err != nil {
		t.Fatalf("Apply: %v\nsupervisor:\n%s", err, runLog.String())
	}
	cfg, _ := os.ReadFile(root.Config)
	if strings.Contains(string(cfg), `"vision"`) {
		t.Errorf("vision still in the config:\n%s", cfg)
	}
	if got, _ := os.ReadFile(calls); !strings.Contains(string(got), "install --strata-root "+root.Dir) {
		t.Errorf("strata-service calls: %s", got)
	}
	if len(lines) == 0 {
		t.Error("no live log lines while following the start")
	}
	s, _ := settings.Load(settingsPath)
	if s.Vision != settings.PlacementOff || s.ConfigPath != root.Config {
		t.Errorf("settings %+v", s)
	}

	// 2. Back to the GPU, but the new start fails: exact bytes come back.
	before, _ := os.ReadFile(root.Config)
	settingsBefore, _ := os.ReadFile(settingsPath)
	root.SetMode("fail-start")
	f = walkTo(settings.PlacementGPU)
	err := f.Apply.Run(ctx, nil)
	root.SetMode("")
	var ae *setupflow.ApplyError
	if !errors.As(err, &ae) || ae.Step != "start Strata" {
		t.Fatalf("Apply with a failing start: %v", err)
	}
	if now, _ := os.ReadFile(root.Config); !bytes.Equal(now, before) {
		t.Errorf("config not restored:\n%s\nwant:\n%s", now, before)
	}
	if now, _ := os.ReadFile(settingsPath); !bytes.Equal(now, settingsBefore) {
		t.Errorf("settings not restored:\n%s\nwant:\n%s", now, settingsBefore)
	}
	t.Logf("the failure as the user reads it: %v", err)
	// Off, then GPU, then the rollback: three replacements of the config,
	// none by this process.
	if n := configWrites(); n >= 0 && n < 3 {
		t.Errorf("the inotify watch saw %d replacements of the config, want 3 (by the service)", n)
	}
	// The old server runs again: the machine is as it was.
	waitReady(t, runLog)
}

// runService starts `strata-service run --foreground` with args, as the
// OS service would run, until the test ends; its output is the buffer.
func runService(t *testing.T, svc string, args ...string) *testenv.Buffer {
	t.Helper()
	run := exec.Command(svc, append([]string{"run", "--foreground", "--restart-delay", "100ms"}, args...)...)
	log := &testenv.Buffer{}
	run.Stdout, run.Stderr = log, log
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Signal(os.Interrupt); run.Wait() })
	return log
}

// wizardDeps is the demo machine with the real config, settings and
// service: strata-service through a wrapper whose `install` does nothing
// (no OS service here), each call appended to calls when it is not "".
func wizardDeps(t *testing.T, svc, root, config, settingsPath, calls string) setupflow.Deps {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "strata-service-wrapper")
	record := ""
	if calls != "" {
		record = "echo \"$@\" >> " + calls + "\n"
	}
	if err := testenv.WriteExecutable(wrapper, []byte("#!/bin/sh\n"+record+"[ \"$1\" = install ] && exit 0\nexec "+svc+" \"$@\"\n")); err != nil {
		t.Fatal(err)
	}
	d := demo.NewWorld(root).Deps(nil)
	real := live.Deps(live.Options{SettingsPath: settingsPath, ServiceExe: wrapper})
	d.Finder = live.Finder{SettingsPath: settingsPath, Root: root, Config: config}
	d.Config, d.Settings = real.Config, real.Settings
	d.Service = &live.Service{Exe: wrapper, StartTimeout: 2 * time.Minute, Poll: time.Second}
	return d
}

// waitReady waits for the supervisor's control API to say the server is ready.
func waitReady(t *testing.T, log *testenv.Buffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if c, err := controlapi.NewClient(); err == nil {
			if st, err := c.State(context.Background()); err == nil && st.Server.Phase == controlapi.PhaseReady {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the supervised stand-in did not get ready:\n%s", log.String())
}
