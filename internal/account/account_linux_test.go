package account

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the service's own view of other accounts' folders")
	}
}

// install makes ROOT/serve/server.py and ROOT/.venv/bin/python in a folder
// only root can change, and returns ROOT.
func install(t *testing.T) string {
	t.Helper()
	base := t.TempDir() // 0700, root's, in the sticky /tmp
	root := filepath.Join(base, "strata")
	for _, d := range []string{filepath.Join(root, "serve"), filepath.Join(root, ".venv", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "serve", "server.py"), []byte("print()"), 0o644)
	os.WriteFile(filepath.Join(root, ".venv", "bin", "python"), []byte("#!/bin/sh\n"), 0o755)
	return root
}

// H5: the service ran ROOT/.venv/bin/python serve/server.py as root with
// no look at who owns it. Now: an install another account owns runs as
// that account; a root-owned one that another account can still change
// (group- or world-writable, a folder above it that is theirs) is refused
// with what to do; only one nobody but root can change runs as root.
func TestServerAccount(t *testing.T) {
	needRoot(t)
	root := install(t)
	py := filepath.Join(root, ".venv", "bin", "python")
	if a, err := ServerAccount(root, py); err != nil || a != nil {
		t.Fatalf("a root-only install: %v %v, want root's own", a, err)
	}

	os.Chown(root, 65534, 65534)
	a, err := ServerAccount(root, py)
	if err != nil || a == nil || a.UID != 65534 || a.Credential().Uid != 65534 {
		t.Fatalf("an install nobody owns: %+v %v, want it run as nobody", a, err)
	}
	os.Chown(root, 0, 0)

	refuse := func(what, want string) {
		t.Helper()
		_, err := ServerAccount(root, py)
		var re *ServerRefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "chown") {
			t.Fatalf("%s: %v, want a refusal naming %q and the fix", what, err, want)
		}
	}
	server := filepath.Join(root, "serve", "server.py")
	os.Chmod(server, 0o666)
	refuse("a world-writable server.py", server)
	os.Chmod(server, 0o644)
	os.Chown(filepath.Join(root, "serve"), 0, 100)
	os.Chmod(filepath.Join(root, "serve"), 0o775)
	refuse("a group-writable serve folder", "group")
	os.Chmod(filepath.Join(root, "serve"), 0o755)
	os.Chown(py, 65534, 0)
	refuse("a python another account owns", "belongs to nobody")
	os.Chown(py, 0, 0)
	parent := filepath.Dir(root)
	os.Chown(parent, 65534, 65534)
	refuse("a folder above that another account owns", parent)
	os.Chown(parent, 0, 0)
	if a, err := ServerAccount(root, py); err != nil || a != nil {
		t.Fatalf("put back: %v %v", a, err)
	}
}

// The operator token's file: root and the reader only, never anyone else,
// not even while it is being written.
func TestWritePrivate(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	p := filepath.Join(dir, "control-operator-token")
	reader := &Account{Name: "nobody", UID: 65534, GID: 65534}
	if err := WritePrivate(p, []byte("tok\n"), reader); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || st.Mode().Perm() != 0o400 {
		t.Fatalf("the token file: uid %d mode %o", sys.Uid, st.Mode().Perm())
	}
	cat := func(uid uint32) error {
		cmd := exec.Command("cat", p)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd.Run()
	}
	if err := cat(65534); err != nil {
		t.Fatalf("the reader cannot read it: %v", err)
	}
	if err := cat(12345); err == nil {
		t.Fatal("another account read the token")
	}
	// Root alone.
	if err := WritePrivate(p, []byte("tok2\n"), nil); err != nil {
		t.Fatal(err)
	}
	if err := cat(65534); err == nil {
		t.Fatal("nobody read a root-only token")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

// Issue 32, High: a root-owned install whose config (or what it names:
// engine, encoder, cwd, LD_PRELOAD/PYTHONPATH in its env) or engine/ the
// owner may change ran the owner's programs as root: the check looked at
// the folder, serve/, server.py and the python only. Now each is a refusal
// that names it and a fix.
func TestServerAccountLooksAtWhatStrataLoads(t *testing.T) {
	needRoot(t)
	root := install(t)
	py := filepath.Join(root, ".venv", "bin", "python")
	cfg := filepath.Join(root, "strata-x.json")
	os.WriteFile(cfg, []byte("{}"), 0o644)
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	engine := filepath.Join(root, "engine", "strata")
	os.WriteFile(engine, []byte("#!/bin/sh\n"), 0o755)
	elsewhere := t.TempDir()
	preload := filepath.Join(elsewhere, "evil.so")
	os.WriteFile(preload, []byte("x"), 0o644)
	if a, err := ServerAccount(root, py, cfg, preload); err != nil || a != nil {
		t.Fatalf("all root's alone: %v %v, want root's own", a, err)
	}
	refuse := func(what, want string, loads ...string) {
		t.Helper()
		_, err := ServerAccount(root, py, loads...)
		var re *ServerRefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "chown") {
			t.Fatalf("%s: %v, want a refusal naming %q and the fix", what, err, want)
		}
	}
	for _, c := range []struct {
		what, path string
		loads      []string
	}{
		{"a config the owner may change", cfg, []string{cfg}},
		{"an engine in engine/ the owner may change", engine, nil},
		{"an LD_PRELOAD the owner may change", preload, []string{cfg, preload}},
	} {
		os.Chown(c.path, 65534, 65534)
		refuse(c.what, c.path, c.loads...)
		os.Chown(c.path, 0, 0)
		os.Chmod(c.path, 0o666)
		refuse(c.what+" (world-writable)", c.path, c.loads...)
		os.Chmod(c.path, 0o644)
	}
	// a folder the config names as cwd, that others may write
	cwd := filepath.Join(elsewhere, "cwd")
	os.Mkdir(cwd, 0o777)
	os.Chmod(cwd, 0o777)
	refuse("a cwd every account may change", cwd, cfg, cwd)
}

// Issue 32, Medium-low: `python -m venv` makes .venv/bin/python a symbolic
// link; the check read the link's own mode (777) and refused every such
// venv, advising a chmod that cannot change a link. Now the link is judged
// by its target and the target's folders.
func TestServerAccountJudgesAVenvLinkByItsTarget(t *testing.T) {
	needRoot(t)
	root := install(t)
	py := filepath.Join(root, ".venv", "bin", "python")
	real := filepath.Join(t.TempDir(), "python3.11")
	os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755)
	os.Remove(py)
	if err := os.Symlink(real, py); err != nil {
		t.Fatal(err)
	}
	if a, err := ServerAccount(root, py); err != nil || a != nil {
		t.Fatalf("a root venv whose python links to a root-only python: %v %v, want it run as root", a, err)
	}
	os.Chmod(real, 0o777)
	if _, err := ServerAccount(root, py); err == nil || !strings.Contains(err.Error(), real) {
		t.Fatalf("a link to a world-writable python: %v, want a refusal naming %s", err, real)
	}
	os.Chmod(real, 0o755)
	os.Chown(filepath.Dir(real), 65534, 65534)
	if _, err := ServerAccount(root, py); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("a link into a folder nobody owns: %v, want a refusal", err)
	}
	os.Chown(filepath.Dir(real), 0, 0)
}
