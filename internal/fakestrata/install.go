package fakestrata

// The one fake Strata install, in two forms: Install (this file) is the
// layout as Strata's setup leaves it, for code that reads an install
// (serve/server.py, engine/strata and engine/strata-vision, the venv's
// python, models/*.gguf, a config and its run script; docs/strata.md) with
// programs that are placeholders; Root (root.go) is the same skeleton made
// runnable, its server.py and python running the stand-in server.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Model file names, as Strata's setup downloads them.
const (
	ModelShard = "Qwen3.5-122B-A10B-IQ2_XS-00001-of-00003.gguf"
	MMProjBF16 = "mmproj-Qwen3.5-122B-A10B-BF16.gguf"
	MMProjQ8   = "mmproj-Qwen3.5-122B-A10B-Q8_0.gguf"
)

// Install is a fake Strata install for code that reads one (nothing in it runs).
type Install struct {
	Root      string // the install folder
	Config    string // ROOT/strata-<tag>.json
	RunScript string // ROOT/run-<tag>.sh
	Relay     string // a stand-in strata-vision-relay, outside the install
	Settings  string // where the companion settings file would be
}

// InstallOptions shape NewInstall.
type InstallOptions struct {
	Tag string // default "iq2_xs"
	// Config is the config text. @ROOT@ is replaced with the install
	// folder, @MODELS@ with ROOT/models, @RELAY@ with the stand-in relay and
	// @SETTINGS@ with the settings path, all JSON-escaped (no quotes).
	Config string
	// NoMMProj leaves the projectors out of models/.
	NoMMProj bool
	// NoRunScript leaves the run script out.
	NoRunScript bool
	// Windows lays out the venv as Windows does (.venv/Scripts/python.exe)
	// and names the engine strata.exe.
	Windows bool
}

// Write creates path with data, and its folders.
func Write(t testing.TB, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// JSONPath is p escaped for use inside a JSON string.
func JSONPath(p string) string {
	b, _ := json.Marshal(p)
	return strings.Trim(string(b), `"`)
}

// NewInstall lays out an install under dir (a fresh t.TempDir() when dir is "").
func NewInstall(t testing.TB, dir string, o InstallOptions) *Install {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if o.Tag == "" {
		o.Tag = "iq2_xs"
	}
	root := filepath.Join(dir, "Strata")
	ext := ""
	if o.Windows {
		ext = ".exe"
	}
	in := &Install{
		Root:     root,
		Config:   filepath.Join(root, "strata-"+o.Tag+".json"),
		Relay:    filepath.Join(dir, "companion", "strata-vision-relay"+ext),
		Settings: filepath.Join(dir, "companion-home", "settings.json"),
	}
	if err := skeleton(root, o.Windows, "#!/bin/sh\nexit 0\n"); err != nil {
		t.Fatal(err)
	}
	Write(t, filepath.Join(root, "engine", "strata-vision"+ext), "#!/bin/sh\necho READY 2560\n", 0o755)
	Write(t, filepath.Join(root, "models", ModelShard), "GGUF", 0o644)
	if !o.NoMMProj {
		Write(t, filepath.Join(root, "models", MMProjBF16), "GGUF", 0o644)
		Write(t, filepath.Join(root, "models", MMProjQ8), "GGUF", 0o644)
	}
	Write(t, in.Relay, "#!/bin/sh\necho READY 2560\n", 0o755)
	if o.Config != "" {
		text := strings.ReplaceAll(o.Config, "@ROOT@", JSONPath(root))
		text = strings.ReplaceAll(text, "@MODELS@", JSONPath(filepath.Join(root, "models")))
		text = strings.ReplaceAll(text, "@RELAY@", JSONPath(in.Relay))
		text = strings.ReplaceAll(text, "@SETTINGS@", JSONPath(in.Settings))
		Write(t, in.Config, text, 0o644)
	}
	if !o.NoRunScript {
		in.RunScript = filepath.Join(root, "run-"+o.Tag+".sh")
		Write(t, in.RunScript, "#!/bin/sh\ncd \"$(dirname \"$0\")\"\nexec .venv/bin/python serve/server.py --engine strata --config strata-"+o.Tag+".json --open \"$@\"\n", 0o755)
	}
	return in
}

// skeleton writes what every Strata install has: serve/server.py, the
// engine (engineScript) and the venv's python (placeholders a Root then
// makes runnable).
func skeleton(root string, windows bool, engineScript string) error {
	ext, python := "", filepath.Join(root, ".venv", "bin", "python")
	if windows {
		ext, python = ".exe", filepath.Join(root, ".venv", "Scripts", "python.exe")
	}
	for _, f := range []struct {
		path, data string
		mode       os.FileMode
	}{
		{filepath.Join(root, "serve", "server.py"), "# Strata's server (stand-in)\n", 0o644},
		{filepath.Join(root, "engine", "strata"+ext), engineScript, 0o755},
		{python, "#!/bin/sh\n", 0o755},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := writeFile(f.path, []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// writeFile is os.WriteFile, for a program under the fork lock (see
// writeExecutable).
func writeFile(path string, data []byte, mode os.FileMode) error {
	if mode&0o111 != 0 {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
	}
	return os.WriteFile(path, data, mode)
}

// GPUVisionConfig is a config as Strata's setup writes it for pictures read
// on the GPU, with a key the companion does not know (future_key), for
// InstallOptions.Config (its @ROOT@ and @MODELS@ are filled in).
const GPUVisionConfig = `{
  "exe": "@ROOT@/engine/strata",
  "args": [
    "--model",
    "@MODELS@/` + ModelShard + `",
    "--vision",
    "--vram-reserve-mib",
    "700"
  ],
  "port": 8095,
  "vision": {
    "exe": "@ROOT@/engine/strata-vision",
    "mmproj": "@MODELS@/` + MMProjBF16 + `",
    "model": "@MODELS@/` + ModelShard + `",
    "gpu": true,
    "max_tokens": 1024
  },
  "future_key": {"kept": [1, 2.50]}
}
`
