//go:build linux

package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Wine is a private 64-bit wine prefix with its own wineserver, made once per
// test binary (SharedWine) and torn down by Main. Everything wine writes goes
// under Dir: the prefix, a private HOME and XDG folders (wine links the
// prefix's Desktop and Documents to XDG folders, and winemenubuilder would
// write menu entries into the real home: it is turned off).
//
// Facts it builds on: Go programs need ProcessPrng, which wine 8
// lacks (a shim bcryptprimitives.dll built with mingw goes into system32); a
// persistent wineserver (-p) and one `wine cmd /c exit` come first, with
// output into files, or wine's helper processes hold a caller's pipes open.
type Wine struct {
	Dir    string // everything of this wine: prefix, home, built programs
	Prefix string
	Home   string
	Env    []string // os.Environ with WINEPREFIX, HOME, XDG_* ... set

	mu     sync.Mutex
	built  map[string]string
	keep   *exec.Cmd
	keepIn io.WriteCloser
}

// WineEnvNeeded names the variable that makes a missing wine a failure.
const WineEnvNeeded = "STRATA_TEST_WINE"

var (
	sharedManaged bool
	sharedOnce    sync.Once
	sharedWine    *Wine
	sharedErr     error
)

// NeedWine skips t (or fails it under STRATA_TEST_WINE=1 or strict mode)
// when wine, wineserver or the mingw compiler is missing.
func NeedWine(t testing.TB) {
	t.Helper()
	for _, p := range []string{"wine", "wineserver", "x86_64-w64-mingw32-gcc"} {
		if _, err := exec.LookPath(p); err != nil {
			msg := p + " is not installed (apt-get install wine wine64 gcc-mingw-w64-x86-64, or run scripts/install-deps.sh)"
			if os.Getenv(WineEnvNeeded) == "1" || Strict() {
				t.Fatalf("%s=1 but %s", WineEnvNeeded, msg)
			}
			t.Skip(msg + "; set " + WineEnvNeeded + "=1 to require it")
		}
	}
}

// SharedWine is this test binary's wine prefix, made on first use (about
// 20-60 s on a busy 2-core machine) and reused by every later test. The
// package's TestMain must call testenv.Main so it is stopped and removed.
func SharedWine(t testing.TB) *Wine {
	t.Helper()
	NeedWine(t)
	if !sharedManaged {
		t.Fatal("the shared wine needs a TestMain that removes it: func TestMain(m *testing.M) { testenv.Main(m) }, or testenv.ShareWine() around m.Run()")
	}
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-wine-")
		if err != nil {
			sharedErr = err
			return
		}
		sharedWine, sharedErr = NewWine(dir)
		if sharedErr != nil {
			os.RemoveAll(dir)
		}
	})
	if sharedErr != nil {
		t.Fatalf("setting up wine: %v", sharedErr)
	}
	return sharedWine
}

// Main runs the tests and then stops and removes the shared wine (and any
// other shared fixture). Use it as `func TestMain(m *testing.M) { testenv.Main(m) }`.
func Main(m *testing.M) {
	stop := ShareWine()
	code := m.Run()
	stop()
	os.Exit(code)
}

// ShareWine allows SharedWine in this test binary; the returned function
// stops and removes it (call it after m.Run in a TestMain of your own).
func ShareWine() (stop func()) {
	sharedManaged = true
	return StopShared
}

// StopShared stops and removes the shared wine.
func StopShared() {
	if sharedWine != nil {
		sharedWine.Close()
		sharedWine = nil
	}
}

// WineFor is a wine of t's own (for a package with one wine test), made
// under t's temp folder and closed when t ends. base, when not nil, is the
// whole environment to start from (a display's, for a GUI program).
func WineFor(t testing.TB, base []string) *Wine {
	t.Helper()
	NeedWine(t)
	w, err := NewWineEnv(filepath.Join(t.TempDir(), "wine"), base)
	if err != nil {
		t.Fatalf("setting up wine: %v", err)
	}
	t.Cleanup(w.Close)
	return w
}

// NewWine makes a prefix under dir (which it owns from now on) and starts
// its wineserver. Close stops it.
func NewWine(dir string) (*Wine, error) { return NewWineEnv(dir, nil) }

// NewWineEnv is NewWine starting from the environment base (nil: this
// process's, without its display).
func NewWineEnv(dir string, base []string) (*Wine, error) {
	w := &Wine{Dir: dir, Prefix: filepath.Join(dir, "prefix"), Home: filepath.Join(dir, "home"), built: map[string]string{}}
	for _, d := range []string{w.Prefix, w.Home, filepath.Join(w.Home, ".cache"), filepath.Join(w.Home, ".config"),
		filepath.Join(w.Home, ".local", "share"), filepath.Join(dir, "run"), filepath.Join(dir, "bin"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	own := base == nil
	if own {
		base = os.Environ()
	}
	env := []string{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "TMPDIR", strings.HasPrefix(k, "WINE"), k == "XDG_CONFIG_HOME", k == "XDG_DATA_HOME", k == "XDG_CACHE_HOME":
			continue
		case own && (k == "DISPLAY" || k == "WAYLAND_DISPLAY" || strings.HasPrefix(k, "XDG_")):
			continue
		}
		env = append(env, kv)
	}
	if own {
		env = append(env, "XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	}
	w.Env = append(env,
		"WINEPREFIX="+w.Prefix, "WINEARCH=win64", "WINEDEBUG=-all",
		// No Mono/Gecko install prompts, no menu entries or file
		// associations written into a home.
		"WINEDLLOVERRIDES=mscoree,mshtml=;winemenubuilder.exe=d",
		"HOME="+w.Home,
		// Debian's wine keeps wineserver's socket folder in
		// $TMPDIR/wine-XXXXXX: inside Dir, so Close takes it away.
		"TMPDIR="+filepath.Join(dir, "tmp"),
		"XDG_CONFIG_HOME="+filepath.Join(w.Home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(w.Home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(w.Home, ".cache"),
	)
	// wineserver forks a daemon that keeps its stdout: no pipe here.
	srv := exec.Command("wineserver", "-p", "900")
	srv.Env = w.Env
	if err := srv.Run(); err != nil {
		return nil, fmt.Errorf("wineserver -p: %v", err)
	}
	// One Windows process lives as long as the prefix (cmd.exe waiting on a
	// stdin only we hold): wine's system processes (services.exe, ...)
	// start now with output into a file, and never stop and start again
	// later from an ssh session, whose pipes they would hold open.
	log, err := os.Create(filepath.Join(dir, "keepalive.log"))
	if err != nil {
		return nil, err
	}
	keep := w.Command(context.Background(), "cmd.exe")
	keep.Stdout, keep.Stderr = log, log
	if w.keepIn, err = keep.StdinPipe(); err == nil {
		err = keep.Start()
	}
	log.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting wine: %v", err)
	}
	w.keep = keep
	if out, ok := w.Run("cmd", "/c", "exit"); !ok {
		w.Close()
		return nil, fmt.Errorf("creating the wine prefix failed:\n%s", out)
	}
	// Windows' OpenSSH needs Windows 10 or later; wine 8's default is 7.
	if out, ok := w.Run("winecfg", "-v", "win10"); !ok {
		w.Close()
		return nil, fmt.Errorf("winecfg -v win10: %s", out)
	}
	if err := w.installShim(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Close stops the wineserver (and every Windows process of the prefix) and
// removes Dir.
func (w *Wine) Close() {
	if w.keepIn != nil {
		w.keepIn.Close()
	}
	k := exec.Command("wineserver", "-k")
	k.Env = w.Env
	k.Run()
	w2 := exec.Command("wineserver", "-w")
	w2.Env = w.Env
	done := make(chan struct{})
	go func() { w2.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		if w2.Process != nil {
			w2.Process.Kill()
		}
	}
	if w.keep != nil {
		w.keep.Process.Kill()
		w.keep.Wait()
	}
	os.RemoveAll(w.Dir)
}

// Command is `wine args...` in this prefix. Give it files, not pipes, for
// stdout/stderr when it may start wine's helper processes.
func (w *Wine) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "wine", args...)
	cmd.Env = w.Env
	cmd.Dir = w.Dir
	return cmd
}

// Run runs a Windows program (stdin /dev/null, output through a file) for at
// most 3 minutes and returns its output and whether it exited 0.
func (w *Wine) Run(args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := w.Command(ctx, args...)
	f, err := os.CreateTemp(w.Dir, "out-*")
	if err != nil {
		return err.Error(), false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, _ := os.ReadFile(f.Name())
	return string(out), err == nil
}

// Drive is the Linux path of a path on the prefix's C: drive, given as
// `Strata\serve` or `C:\Strata\serve`. It does not resolve letter case.
func (w *Wine) Drive(p string) string {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "C:"), "c:")
	p = strings.Trim(strings.ReplaceAll(p, "/", `\`), `\`)
	parts := []string{w.Prefix, "drive_c"}
	if p != "" {
		parts = append(parts, strings.Split(p, `\`)...)
	}
	return filepath.Join(parts...)
}

// System32 is the Linux path of C:\windows\system32.
func (w *Wine) System32() string { return w.Drive(`windows\system32`) }

func (w *Wine) installShim() error {
	shim := filepath.Join(w.Dir, "shim.c")
	os.WriteFile(shim, []byte(`#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) { ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE; data += n; len -= n; }
  return TRUE;
}
`), 0o644)
	def := filepath.Join(w.Dir, "shim.def")
	os.WriteFile(def, []byte("LIBRARY bcryptprimitives\nEXPORTS\n  ProcessPrng\n"), 0o644)
	cc := exec.Command("x86_64-w64-mingw32-gcc", "-O2", "-shared", "-s", "-o",
		filepath.Join(w.System32(), "bcryptprimitives.dll"), shim, def, "-ladvapi32")
	if out, err := cc.CombinedOutput(); err != nil {
		return fmt.Errorf("building the ProcessPrng shim (Go programs need it under wine 8): %v\n%s", err, out)
	}
	return nil
}

// Build cross-compiles a Go package for windows/amd64 once per test binary
// and returns the .exe's Linux path (under Dir/bin). Copy it where it
// belongs on the Windows side.
func (w *Wine) Build(t testing.TB, pkg string) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.built[pkg]; ok {
		return p
	}
	out := filepath.Join(w.Dir, "bin", filepath.Base(pkg)+".exe")
	if err := BuildGo(out, pkg, "windows", "amd64"); err != nil {
		t.Fatal(err)
	}
	w.built[pkg] = out
	return out
}

// CopyFile copies src to dst (made with mode), creating dst's folder.
func CopyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return writeUnderForkLock(dst, b, mode) // it may be a program: see WriteExecutable
}

// Copy is CopyFile for a test: a failure fails t.
func Copy(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	if err := CopyFile(src, dst, mode); err != nil {
		t.Fatal(err)
	}
}

func runtimeArch() string { return runtime.GOARCH }

// Procs lists the processes that run in this prefix (their WINEPREFIX),
// wineserver included, as "pid command line"; with exe set, only those
// whose program (argv[0], the Windows path wine shows) ends in exe, letter
// case ignored. Other tests' wine processes on the machine are not counted.
func (w *Wine) Procs(exe string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00WINEPREFIX="+w.Prefix+"\x00")) {
			continue
		}
		cl, _ := os.ReadFile(d + "/cmdline")
		argv0, _, _ := strings.Cut(string(cl), "\x00")
		if exe != "" && !strings.HasSuffix(strings.ToLower(argv0), strings.ToLower(exe)) {
			continue
		}
		out = append(out, filepath.Base(d)+" "+strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " ")))
	}
	return out
}
