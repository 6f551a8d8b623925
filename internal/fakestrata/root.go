package fakestrata

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// Root is a fake Strata install laid out as the real one:
//
//	ROOT/serve/server.py      a Python shim that execs the stand-in
//	ROOT/.venv/bin/python     a shell script that runs the stand-in with its arguments
//	ROOT/strata-<tag>.json    the config (port, log, api_key, vision...)
//	ROOT/engine/strata        a placeholder (the stand-in is its own engine)
//	ROOT/standin-mode         the mode file (see EnvModeFile), empty at first
//	ROOT/tmp                  the server's TMPDIR (its strata-vision-* folders)
//
// so `<venv python> serve/server.py --engine strata --config C --port P`, run
// in ROOT, behaves as docs/strata.md says.
type Root struct {
	Dir      string
	Config   string // path of strata-<tag>.json
	Python   string // ROOT/.venv/bin/python
	Port     int
	Log      string // the engine log (the config's `log`)
	ModeFile string
	APIKey   string
	GPU      string // EnvGPU as baked into the python shim ("" when unset)
}

// RootOptions shapes NewRoot.
type RootOptions struct {
	Tag    string         // default "test"
	Port   int            // default: a free port
	APIKey string         // default none
	Step   string         // EnvStep baked into the python shim (default "20ms")
	Mode   string         // initial content of the mode file
	Extra  map[string]any // more config keys (e.g. "vision")
	// Env is more environment baked into the python shim (KEY=VALUE).
	Env []string
	// Vision reads pictures on the GPU: a vision block and --vision in the
	// config, ROOT/strata-vision and engine/strata-vision (EncoderScript:
	// READY 2560, ERR to every picture, QUIT ends it), and ROOT's
	// model.gguf (the one args names), mmproj-BF16.gguf and stub.gguf.
	// Extra's "vision" and "args" win.
	Vision bool
}

// EncoderScript is the encoder RootOptions.Vision installs: it starts
// (READY 2560), refuses every picture (ERR) and ends on QUIT.
const EncoderScript = "#!/bin/sh\necho READY 2560\nwhile read c a b; do [ \"$c\" = QUIT ] && exit 0; echo 'ERR stand-in'; done\n"

// MakeRoot lays out a fake install in dir around the stand-in binary bin.
func MakeRoot(dir, bin string, o RootOptions) (*Root, error) {
	if o.Tag == "" {
		o.Tag = "test"
	}
	if o.Step == "" {
		o.Step = "20ms"
	}
	if o.Port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		o.Port = p
	}
	r := &Root{Dir: dir, Port: o.Port, APIKey: o.APIKey,
		Config:   filepath.Join(dir, "strata-"+o.Tag+".json"),
		Python:   filepath.Join(dir, ".venv", "bin", "python"),
		Log:      filepath.Join(dir, "strata-"+o.Tag+".log"),
		ModeFile: filepath.Join(dir, "standin-mode"),
	}
	// The install's skeleton (install.go). The engine the config names
	// exists (config checks look for it); the stand-in plays the engine
	// itself, so this one only says so. server.py and python are made
	// runnable below.
	if err := skeleton(dir, false, "#!/bin/sh\necho 'strata stand-in: the engine runs inside strata-standin' >&2\nexit 1\n"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"exe":  "engine/strata",
		"args": []string{"-m", "model-" + o.Tag + ".gguf"},
		"log":  "strata-" + o.Tag + ".log",
		"port": o.Port,
	}
	if o.APIKey != "" {
		cfg["api_key"] = o.APIKey
	}
	if o.Vision {
		enc := filepath.Join(dir, "strata-vision")
		for _, p := range []string{enc, filepath.Join(dir, "engine", "strata-vision")} {
			if err := writeExecutable(p, []byte(EncoderScript)); err != nil {
				return nil, err
			}
		}
		for _, f := range []string{"mmproj-BF16.gguf", "stub.gguf", "model.gguf"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("GGUF"), 0o644); err != nil {
				return nil, err
			}
		}
		cfg["args"] = []string{"-m", "model.gguf", "--vision", "--vram-reserve-mib", "700"}
		cfg["vision"] = map[string]any{"exe": enc, "mmproj": filepath.Join(dir, "mmproj-BF16.gguf"), "model": filepath.Join(dir, "stub.gguf"), "gpu": true}
	}
	for k, v := range o.Extra {
		cfg[k] = v
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(r.Config, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(r.ModeFile, []byte(o.Mode), 0o644); err != nil {
		return nil, err
	}
	server := fmt.Sprintf("# Strata stand-in: runs %s with this script's arguments.\nimport os, sys\nos.execv(%q, [%q] + sys.argv)\n", bin, bin, bin)
	if err := os.WriteFile(filepath.Join(dir, "serve", "server.py"), []byte(server), 0o644); err != nil {
		return nil, err
	}
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\n# The venv python of a fake Strata install: runs the stand-in.\n")
	fmt.Fprintf(&sh, "export %s=%s\n", EnvStep, remotecmd.POSIX(o.Step))
	fmt.Fprintf(&sh, "export %s=%s\n", EnvModeFile, remotecmd.POSIX(r.ModeFile))
	// Strata's temp folders (strata-vision-*, which it leaves behind) go
	// into the install, not /tmp: a test's root is removed with the test.
	fmt.Fprintf(&sh, "export TMPDIR=%s\n", remotecmd.POSIX(filepath.Join(dir, "tmp")))
	for _, kv := range o.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == EnvGPU {
			r.GPU = v
		}
		fmt.Fprintf(&sh, "export %s=%s\n", k, remotecmd.POSIX(v))
	}
	fmt.Fprintf(&sh, "exec %s \"$@\"\n", remotecmd.POSIX(bin))
	if err := writeExecutable(r.Python, []byte(sh.String())); err != nil {
		return nil, err
	}
	return r, nil
}

// NewRoot builds the stand-in (once per test binary) and lays out a fake
// install in a temp folder of t, with its own copy of the stand-in in
// ROOT/.venv/bin, so everything is removed with the test.
func NewRoot(t testing.TB, o RootOptions) *Root {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, ".venv", "bin", exeName)
	if err := writeBinary(t, bin); err != nil {
		t.Fatal(err)
	}
	r, err := MakeRoot(dir, bin, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// SetMode changes what the stand-in does at its next start.
func (r *Root) SetMode(mode string) error { return os.WriteFile(r.ModeFile, []byte(mode), 0o644) }

var exeName = func() string {
	if runtime.GOOS == "windows" {
		return "strata-standin.exe"
	}
	return "strata-standin"
}()

var (
	buildOnce  sync.Once
	buildBytes []byte
	buildErr   error
)

// Build compiles cmd/strata-standin (once per test binary) and returns the
// path of a copy in a temp folder of t. The build itself happens in a folder
// that is removed at once: the program is kept in memory, so a test binary
// leaves nothing behind in /tmp.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), exeName)
	if err := writeBinary(t, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func writeBinary(t testing.TB, path string) error {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-standin-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, exeName)
		cmd := exec.Command("go", "build", "-o", out, "github.com/strata-companion/companion/internal/fakestrata/cmd/strata-standin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the Strata stand-in: %v\n%s", err, msg)
			return
		}
		buildBytes, buildErr = os.ReadFile(out)
	})
	if buildErr != nil {
		return buildErr
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeExecutable(path, buildBytes)
}

// writeExecutable writes a program while no process can be forked: a fork in
// a parallel test between our open and close would hand the child a copy of
// the write descriptor until its exec, and exec'ing the program then fails
// with "text file busy" (ETXTBSY; golang.org/issue/22315, seen in CI).
// os/exec holds syscall.ForkLock for writing while it forks.
// (testenv.WriteExecutable does the same; it is not called here because
// this package is linked into the stand-in programs, which should not carry
// testenv and what it imports.)
func writeExecutable(path string, data []byte) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, 0o755)
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
