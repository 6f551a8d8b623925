package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BuildGo builds pkg for goos/goarch (no cgo) into out. It is the one place
// the tests run `go build`; a test wants Program, which caches.
func BuildGo(out, pkg, goos, goarch string) error {
	return goBuild(out, pkg, BuildOptions{GOOS: goos, GOARCH: goarch})
}

// BuildOptions say how Program builds.
type BuildOptions struct {
	// GOOS and GOARCH: the target (default this machine's).
	GOOS, GOARCH string
	// CGO builds with cgo (the tray needs it); the default is CGO_ENABLED=0.
	CGO bool
	// Flags are more `go build` flags ("-trimpath", "-ldflags=-H=windowsgui").
	Flags []string
	// Name is the program's file name (default the package's last element,
	// with .exe for Windows).
	Name string
	// Dir is the folder it is written to (default a new one of t's).
	Dir string
}

func goBuild(out, pkg string, o BuildOptions) error {
	goos, goarch := o.GOOS, o.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	args := append(append([]string{"build"}, o.Flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cgo := "0"
	if o.CGO {
		cgo = "1"
	}
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	return nil
}

type built struct {
	once sync.Once
	data []byte
	err  error
}

var builds sync.Map // key -> *built

// Program builds the Go package pkg (an import path, or a folder relative
// to the test's, such as ".") once per test binary for each target and set
// of flags, and writes the program into a folder of t's own on each call,
// returning its path. The build's bytes are kept in memory and its folder
// removed at once, so nothing is left behind and later tests do not build
// again (a link is seconds on a loaded 2-core machine).
func Program(t testing.TB, pkg string, o ...BuildOptions) string {
	t.Helper()
	var opts BuildOptions
	if len(o) > 0 {
		opts = o[0]
	}
	if strings.HasPrefix(pkg, ".") {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			t.Fatal(err)
		}
		pkg = abs
	}
	name := opts.Name
	if name == "" {
		name = filepath.Base(pkg)
		if opts.GOOS == "windows" {
			name += ".exe"
		}
	}
	key := strings.Join(append([]string{pkg, opts.GOOS, opts.GOARCH, fmt.Sprint(opts.CGO)}, opts.Flags...), "\x00")
	v, _ := builds.LoadOrStore(key, &built{})
	b := v.(*built)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "strata-build-")
		if err != nil {
			b.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "prog")
		if b.err = goBuild(out, pkg, opts); b.err == nil {
			b.data, b.err = os.ReadFile(out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	dir := opts.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := WriteExecutable(path, b.data); err != nil {
		t.Fatal(err)
	}
	return path
}
