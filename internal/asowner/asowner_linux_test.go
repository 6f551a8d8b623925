package asowner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/testenv"
)

// nobody is the install's owner in these tests: an ordinary account.
var nobody = &account.Account{Name: "nobody", UID: 65534, GID: 65534, Home: "/nonexistent"}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the service acting in another account's folder")
	}
}

// ownerDir is a folder nobody owns, reachable by nobody (the test folders
// above it opened to it).
func ownerDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	testenv.OpenPath(t, base)
	dir := filepath.Join(base, "strata")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, 65534, 65534)
	return dir
}

func write(t *testing.T, p, s string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
	os.Chown(p, uid, uid)
}

// Each way an owner could make root read what the owner may not: a link,
// a hard link, a FIFO, a huge file, a folder it cannot enter. The owner's
// own files, and root's own links (in folders only root may change), open.
func TestOpenAsOwner(t *testing.T) {
	needRoot(t)
	dir := ownerDir(t)
	rootDir := filepath.Dir(dir) // root's, 0755
	secret := filepath.Join(rootDir, "root-only")
	write(t, secret, "root's secret", 0o600, 0)
	write(t, filepath.Join(dir, "strata-a.json"), `{"a":1}`, 0o644, 65534)
	os.Symlink(secret, filepath.Join(dir, "strata-link.json"))
	os.Symlink(filepath.Join(dir, "strata-a.json"), filepath.Join(dir, "strata-ownlink.json"))
	if err := os.Link(secret, filepath.Join(dir, "strata-hard.json")); err != nil {
		t.Fatal(err)
	}
	syscall.Mkfifo(filepath.Join(dir, "strata-fifo.json"), 0o666)
	big := filepath.Join(dir, "strata-big.json")
	write(t, big, "", 0o644, 65534)
	os.Truncate(big, ConfigLimit+1)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Chown(filepath.Join(dir, "sub"), 65534, 65534)
	write(t, filepath.Join(dir, "sub", "x.json"), "{}", 0o644, 65534)
	os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "linkdir"))
	os.Symlink(rootDir, filepath.Join(dir, "up"))
	os.Mkdir(filepath.Join(rootDir, "closed"), 0o700)
	write(t, filepath.Join(rootDir, "closed", "x.json"), "{}", 0o644, 0)
	// root's own link, in a folder only root may change, to the owner's file
	rootLink := filepath.Join(rootDir, "rootlink")
	os.Symlink(filepath.Join(dir, "sub"), rootLink)

	cases := []struct {
		name, path string
		want       string // "" opens; else a word of the refusal
	}{
		{"the owner's config", filepath.Join(dir, "strata-a.json"), ""},
		{"a link to a root-only file", filepath.Join(dir, "strata-link.json"), "symbolic link"},
		{"a link to the owner's own file", filepath.Join(dir, "strata-ownlink.json"), "symbolic link"},
		{"a hard link to a root-only file", filepath.Join(dir, "strata-hard.json"), "may not read"},
		{"a FIFO", filepath.Join(dir, "strata-fifo.json"), "not a regular file"},
		{"a 4 MiB+1 file", big, "larger than"},
		{"a file in a linked folder", filepath.Join(dir, "linkdir", "x.json"), "symbolic link"},
		{"up through a link", filepath.Join(dir, "up", "root-only"), "symbolic link"},
		{"a folder the owner cannot enter", filepath.Join(rootDir, "closed", "x.json"), "may not enter"},
		{"root's own link to the owner's folder", filepath.Join(rootLink, "x.json"), ""},
		{"the folder itself", dir, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadFile(c.path, ConfigLimit, nobody); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: reading it blocked", c.path)
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("%s: %v, want it read", c.path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s: %v, want a refusal saying %q", c.path, err, c.want)
			}
			if !errors.Is(err, ErrRefused) && !strings.Contains(c.want, "enter") {
				t.Fatalf("%s: %v is not a refusal", c.path, err)
			}
		})
	}
	// Without an account (the service in its own folders): a FIFO and a
	// huge file are still refused, without blocking.
	if _, err := ReadFile(filepath.Join(dir, "strata-fifo.json"), ConfigLimit, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("a FIFO with the service's own rights: %v", err)
	}
	if _, err := ReadFile(big, ConfigLimit, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("a huge file with the service's own rights: %v", err)
	}
}

// What the service writes in the owner's folder is the owner's; it never
// writes through a link.
func TestWriteFileAsOwner(t *testing.T) {
	needRoot(t)
	dir := ownerDir(t)
	backup := filepath.Join(dir, "strata-a.json.bak-1")
	if err := WriteFile(backup, []byte("{}"), 0o640, nobody, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(backup)
	if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || s.Gid != 65534 || st.Mode().Perm() != 0o640 {
		t.Fatalf("the new file is uid %d gid %d mode %o, want the owner's, 640", s.Uid, s.Gid, st.Mode().Perm())
	}
	cfg := filepath.Join(dir, "strata-a.json")
	write(t, cfg, "old", 0o600, 65534)
	if err := WriteFile(cfg, []byte("new"), 0o644, nobody, nil); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(cfg)
	if b, _ := os.ReadFile(cfg); string(b) != "new" || st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("rewritten: %q mode %o uid %d, want the new text, its mode and owner kept", b, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid)
	}
	target := filepath.Join(filepath.Dir(dir), "root-file")
	write(t, target, "root's", 0o644, 0)
	os.Symlink(target, filepath.Join(dir, "strata-l.json"))
	if err := WriteFile(filepath.Join(dir, "strata-l.json"), []byte("x"), 0o644, nobody, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("writing over a link: %v, want a refusal", err)
	}
	os.Symlink(filepath.Dir(dir), filepath.Join(dir, "up"))
	if err := WriteFile(filepath.Join(dir, "up", "root-file"), []byte("x"), 0o644, nobody, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("writing through a linked folder: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "root's" {
		t.Fatalf("root's file became %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("left a temporary file %s", e.Name())
		}
	}
}

// A program run as the owner has the owner's ids, HOME and nothing of the
// service's environment.
func TestCommandAsOwner(t *testing.T) {
	needRoot(t)
	dir := ownerDir(t)
	t.Setenv("SERVICE_SECRET", "s3cret")
	cmd := Command(context.Background(), nobody, dir, []string{"EXTRA=1"}, "/bin/sh", "-c", "id -u; id -g; echo $HOME; env")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	if lines[0] != "65534" || lines[1] != "65534" || lines[2] != "/nonexistent" {
		t.Fatalf("ran as %q, want uid/gid 65534 and HOME /nonexistent", lines[:3])
	}
	if strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), "EXTRA=1") {
		t.Fatalf("environment: %s, want the clean one plus EXTRA", out)
	}
	// What it writes is the owner's.
	cmd = Command(context.Background(), nobody, dir, nil, "/bin/sh", "-c", "echo x > made")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st, err := os.Stat(filepath.Join(dir, "made")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("the file it made: %v", err)
	}
}

// For names the owner of a normal account's folder, and nobody (the
// service's own rights) for root's own.
func TestFor(t *testing.T) {
	needRoot(t)
	dir := ownerDir(t)
	if a, err := For(dir); err != nil || a == nil || a.UID != 65534 {
		t.Fatalf("For(a folder nobody owns) = %+v, %v; want nobody", a, err)
	}
	if a, err := For(filepath.Dir(dir)); err != nil || a != nil {
		t.Fatalf("For(root's folder) = %+v, %v; want none", a, err)
	}
	// ReadFileIn: the same rules, the account taken from the folder.
	os.Symlink("/etc/shadow", filepath.Join(dir, "BUILD.json"))
	if _, err := ReadFileIn(dir, filepath.Join(dir, "BUILD.json"), SmallLimit); !errors.Is(err, ErrRefused) {
		t.Fatalf("a linked BUILD.json in the owner's folder: %v", err)
	}
}
