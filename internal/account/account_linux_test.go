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
