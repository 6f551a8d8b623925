package strataconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/asowner"
)

// ownedInstall is a folder nobody (an ordinary account) owns, with a config
// in it, as a root service sees a user's install; and a root-only file
// beside it, holding a valid config's text.
func ownedInstall(t *testing.T) (dir, cfg, secret string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root service in another account's folder")
	}
	base := t.TempDir()
	for _, d := range []string{base, filepath.Dir(base)} {
		os.Chmod(d, 0o755)
	}
	dir = filepath.Join(base, "strata")
	os.Mkdir(dir, 0o755)
	os.Chown(dir, 65534, 65534)
	cfg = filepath.Join(dir, "strata-x.json")
	os.WriteFile(cfg, []byte(`{"port": 8080}`), 0o640)
	os.Chown(cfg, 65534, 65534)
	secret = filepath.Join(base, "root-only.json")
	os.WriteFile(secret, []byte(`{"root_secret": "s3cret-root-only"}`), 0o600)
	return dir, cfg, secret
}

// Issue 32, Medium: `vision restore` followed a symlinked *.bak-* and put
// a root-only file's content into the owner's config. Now a linked backup
// is no backup: the real one is restored, and the new backup the restore
// makes is the owner's, with the config's mode.
func TestRestoreIgnoresALinkedBackup(t *testing.T) {
	dir, cfg, secret := ownedInstall(t)
	real := cfg + ".bak-20260101T000000Z"
	os.WriteFile(real, []byte(`{"port": 9090}`), 0o640)
	os.Chown(real, 65534, 65534)
	os.Symlink(secret, cfg+".bak-20270101T000000Z") // newer: would be picked first
	pinClock(t, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC))
	from, err := Restore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg)
	if from != real || strings.Contains(string(b), "s3cret") || !strings.Contains(string(b), "9090") {
		t.Fatalf("restored from %s: %s, want the real backup %s", from, b, real)
	}
	for _, p := range append(Backups(cfg), cfg) {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || st.Mode().Perm() != 0o640 {
			t.Errorf("%s is uid %d mode %o, want the owner's with the config's mode 640", p, s.Uid, st.Mode().Perm())
		}
	}
	_ = dir
}

// Issue 32, Medium: GET /v1/configs read a symlinked strata-*.json as root
// and showed a root-only file's fields (or its first character in a parse
// error). Now the link is refused and nothing of the file is said.
func TestReadRefusesALinkedConfig(t *testing.T) {
	dir, _, secret := ownedInstall(t)
	link := filepath.Join(dir, "strata-evil.json")
	os.Symlink(secret, link)
	c, err := Read(link)
	if err == nil || !errors.Is(err, asowner.ErrRefused) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("reading a linked config as root: %+v %v, want a refusal", c, err)
	}
}

// Issue 32, Medium: config reads were unbounded os.ReadFile: a FIFO named
// strata-x.json left root threads blocked forever, and a 1 GiB sparse
// config took the service to 1 GB. Now both are refused at once.
func TestReadRefusesAFIFOAndAHugeConfig(t *testing.T) {
	dir, _, _ := ownedInstall(t)
	fifo := filepath.Join(dir, "strata-fifo.json")
	syscall.Mkfifo(fifo, 0o666)
	huge := filepath.Join(dir, "strata-huge.json")
	f, _ := os.Create(huge)
	f.Truncate(1 << 30)
	f.Close()
	os.Chown(huge, 65534, 65534)
	for _, p := range []string{fifo, huge} {
		done := make(chan error, 1)
		go func() { _, err := Read(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, asowner.ErrRefused) {
				t.Errorf("%s: %v, want a refusal", p, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("reading %s did not return", p)
		}
	}
	// The service's own rights (not privileged, or root's own folder): the
	// same refusals.
	os.Chown(dir, 0, 0)
	if _, err := Read(fifo); !errors.Is(err, asowner.ErrRefused) {
		t.Errorf("a FIFO in root's folder: %v", err)
	}
}

// The repair's PlanKeys reads the config as its folder's owner, as
// PlanVision does: a config that is a link to a root-only file is refused,
// and nothing of that file comes into the plan.
func TestPlanKeysRefusesALinkedConfig(t *testing.T) {
	dir, _, secret := ownedInstall(t)
	link := filepath.Join(dir, "strata-evil.json")
	os.Symlink(secret, link)
	ch, err := PlanKeys(link, map[string]string{"port": "9090"}, []string{"port"}, "a backup")
	if err == nil || !errors.Is(err, asowner.ErrRefused) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("planning keys in a linked config as root: %+v %v, want a refusal", ch, err)
	}
}
