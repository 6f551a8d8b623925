package stratainstall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
)

const cfg = `{"exe": "@ROOT@/engine/strata", "args": []}`

func TestFindDescribesAnInstall(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg})
	got, err := Find(context.Background(), Options{Root: in.Root})
	if err != nil {
		t.Fatal(err)
	}
	g := got[0]
	if g.Root != in.Root || g.ServerPy != filepath.Join(in.Root, "serve", "server.py") || g.Python != filepath.Join(in.Root, ".venv", "bin", "python") ||
		len(g.Configs) != 1 || g.Configs[0] != in.Config || len(g.RunScripts) != 1 || g.ConfigInUse != in.Config ||
		!strings.Contains(g.ConfigReason, "run-iq2_xs.sh") {
		t.Fatalf("got %+v", g)
	}
}

func TestWindowsVenvAndBatchScripts(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg, Windows: true, NoRunScript: true})
	fakestrata.Write(t, filepath.Join(in.Root, "strata-coder-iq1_m.json"), cfg, 0o644)
	bat := filepath.Join(in.Root, "run-coder-iq1_m.bat")
	fakestrata.Write(t, bat, "@echo off\r\n\"%~dp0.venv\\Scripts\\python.exe\" \"%~dp0serve\\server.py\" --engine strata --config \"%~dp0strata-coder-iq1_m.json\" --open\r\n", 0o644)
	got, err := Resolve(Options{Root: in.Root})
	if err != nil {
		t.Fatal(err)
	}
	if got.Python != filepath.Join(in.Root, ".venv", "Scripts", "python.exe") || got.ConfigInUse != filepath.Join(in.Root, "strata-coder-iq1_m.json") {
		t.Fatalf("got %+v", got)
	}
}

func TestTheNewestRunScriptNamesTheConfig(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg})
	other := filepath.Join(in.Root, "strata-coder-iq1_m.json")
	fakestrata.Write(t, other, cfg, 0o644)
	newer := filepath.Join(in.Root, "run-coder-iq1_m.sh")
	fakestrata.Write(t, newer, "exec .venv/bin/python serve/server.py --engine strata --config strata-coder-iq1_m.json\n", 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(in.RunScript, old, old)
	got, err := Resolve(Options{Root: in.Root})
	if err != nil || got.ConfigInUse != other || got.RunScripts[0] != newer {
		t.Fatalf("got %+v, %v", got, err)
	}
	// The companion's settings outrank the run scripts.
	got, err = Resolve(Options{Root: in.Root, Settings: &settings.Settings{ConfigPath: in.Config}})
	if err != nil || got.ConfigInUse != in.Config || got.ConfigReason != "named in the companion's settings" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestSeveralConfigsAndNoScriptAsksToChoose(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg, NoRunScript: true})
	fakestrata.Write(t, filepath.Join(in.Root, "strata-coder-iq1_m.json"), cfg, 0o644)
	_, err := Resolve(Options{Root: in.Root})
	var need *NeedConfigError
	if !errors.As(err, &need) || !strings.Contains(err.Error(), "--config") || !strings.Contains(err.Error(), "strata-coder-iq1_m.json, strata-iq2_xs.json") {
		t.Fatalf("err = %v", err)
	}
	if need.Install.Root != in.Root {
		t.Fatal("the error should carry the install")
	}
	got, err := Resolve(Options{Config: filepath.Join(in.Root, "strata-coder-iq1_m.json")})
	if err != nil || got.ConfigInUse != filepath.Join(in.Root, "strata-coder-iq1_m.json") {
		t.Fatalf("--config: %+v %v", got, err)
	}
}

func TestNamedPlacesThatAreNotInstalls(t *testing.T) {
	dir := t.TempDir()
	_, err := Resolve(Options{Root: dir})
	if err == nil || !strings.Contains(err.Error(), dir+" is not a Strata install") {
		t.Fatalf("err = %v", err)
	}
	_, err = Resolve(Options{Config: filepath.Join(dir, "strata-x.json")})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
	fakestrata.Write(t, filepath.Join(dir, "strata-x.json"), cfg, 0o644)
	_, err = Resolve(Options{Config: filepath.Join(dir, "strata-x.json")})
	if err == nil || !strings.Contains(err.Error(), "not beside a Strata install") {
		t.Fatalf("err = %v", err)
	}
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg})
	_, err = Resolve(Options{Config: in.Config, Root: dir})
	if err == nil || !strings.Contains(err.Error(), "is not in the Strata folder") {
		t.Fatalf("err = %v", err)
	}
}

func TestSearchFindsInstallsInTheUsualPlaces(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	a := fakestrata.NewInstall(t, home, fakestrata.InstallOptions{Config: cfg}) // ~/Strata
	drive := filepath.Join(base, "D")
	b := fakestrata.NewInstall(t, filepath.Join(drive, "AI"), fakestrata.InstallOptions{Config: cfg}) // D:\AI\Strata: too deep
	fakestrata.NewInstall(t, drive, fakestrata.InstallOptions{Config: cfg})                           // D:\Strata
	os.MkdirAll(filepath.Join(drive, "Games"), 0o755)

	found, err := Find(context.Background(), Options{SearchDirs: []string{home, drive}})
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, f := range found {
		roots = append(roots, f.Root)
	}
	if len(found) != 2 || found[0].Root != a.Root || found[1].Root != filepath.Join(drive, "Strata") {
		t.Fatalf("found %v (not %s)", roots, b.Root)
	}
	_, err = Resolve(Options{SearchDirs: []string{home, drive}})
	if err == nil || !strings.Contains(err.Error(), "found 2 Strata installs") || !strings.Contains(err.Error(), "--strata-root") {
		t.Fatalf("err = %v", err)
	}
}

func TestNothingFoundSaysWhereItLookedAndWhatToDo(t *testing.T) {
	empty := t.TempDir()
	gone := filepath.Join(empty, "old-Strata")
	_, err := Resolve(Options{SearchDirs: []string{empty}, Settings: &settings.Settings{StrataRoot: gone}})
	if !IsNotFound(err) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"no Strata install found", gone + ", which is no longer a Strata install", "looked in " + empty, "--strata-root DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err %q lacks %q", err, want)
		}
	}
}

func TestSettingsNameTheInstall(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg, NoRunScript: true})
	fakestrata.Write(t, filepath.Join(in.Root, "strata-coder-iq1_m.json"), cfg, 0o644)
	got, err := Resolve(Options{SearchDirs: []string{}, Settings: &settings.Settings{ConfigPath: in.Config}})
	if err != nil || got.Root != in.Root || got.ConfigInUse != in.Config {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestFindStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Find(ctx, Options{SearchDirs: []string{t.TempDir()}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestAnInstallWithoutVenvIsStillFound(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: cfg})
	os.RemoveAll(filepath.Join(in.Root, ".venv"))
	got, err := Resolve(Options{Root: in.Root})
	if err != nil || got.Python != "" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// After `make run`, a plain status in the checkout says how to see the
// demo's stand-in install (its settings are in .demo/companion).
func TestNotFoundPointsAtTheDemo(t *testing.T) {
	checkout := t.TempDir()
	plain := (&NotFoundError{Looked: []string{checkout}}).Error()
	if strings.Contains(plain, "demo") {
		t.Errorf("no demo here, yet: %s", plain)
	}
	for _, d := range []string{".demo/strata/serve", ".demo/strata/engine"} {
		os.MkdirAll(filepath.Join(checkout, d), 0o755)
	}
	os.WriteFile(filepath.Join(checkout, ".demo/strata/serve/server.py"), nil, 0o644)
	msg := (&NotFoundError{Looked: []string{filepath.Join(checkout, "bin"), checkout}}).Error()
	want := "STRATA_COMPANION_HOME=" + filepath.Join(checkout, ".demo", "companion") + " " + filepath.Join(checkout, "bin", "strata-service") + " status"
	if !strings.Contains(msg, want) {
		t.Errorf("the message does not say %q:\n%s", want, msg)
	}
}
