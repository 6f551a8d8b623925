package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/testenv"
)

// rootOwned lists what under dir belongs to root.
func rootOwned(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// Issue 32, High: `update-strata` ran git and Strata's setup.py as root in
// the owner's folder: git refused the owner's checkout ("dubious
// ownership", reported as "offline?"), a git hook the owner set
// (core.fsmonitor) ran as uid 0, and engine/*, setup.py and .git/index
// became root's. Now both run as the owner: the update works, the hook
// runs as the owner, and nothing in the install is root's afterwards.
func TestUpdateRunsAsTheOwner(t *testing.T) {
	testenv.Root(t)
	t.Setenv(locations.EnvHome, t.TempDir())
	ua := testenv.NewUser(t)
	a := accountCred(t, ua)
	r, _, _ := updatableInstall(t)
	origin := gitRun(t, r.Dir, "remote", "get-url", "origin")
	// The owner's hook: it says which account ran git.
	seen := filepath.Join(r.Dir, "tmp", "hook-uids")
	os.MkdirAll(filepath.Dir(seen), 0o755)
	hook := filepath.Join(r.Dir, "tmp", "fsmonitor.sh")
	os.WriteFile(hook, []byte("#!/bin/sh\nid -u >> "+seen+"\nexit 1\n"), 0o755)
	gitRun(t, r.Dir, "config", "core.fsmonitor", hook)
	chownTree(t, r.Dir, a)
	chownTree(t, origin, a)
	if left := rootOwned(r.Dir); len(left) > 0 {
		t.Fatalf("the test's install is not all the owner's: %v", left)
	}

	c, out, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	var since uint64
	follow(t, c, &since, events.ServerReady)
	code, text := cliRun("update-strata", "--yes")
	if code != 0 || !strings.Contains(text, "0.1.43 -> 0.1.44") {
		t.Fatalf("update-strata --yes over the owner's install: %d\n%s\n%s", code, text, out)
	}
	if left := rootOwned(r.Dir); len(left) > 0 {
		t.Fatalf("after the update these in the owner's install are root's: %v", left)
	}
	b, _ := os.ReadFile(seen)
	uids := strings.Fields(string(b))
	if len(uids) == 0 {
		t.Fatalf("the owner's git hook never ran (git was not run in the checkout?)\n%s", text)
	}
	for _, u := range uids {
		if u != strconv.Itoa(int(a.Uid)) {
			t.Fatalf("the owner's git hook ran as uid %s, want only the owner's %d: %v", u, a.Uid, uids)
		}
	}
}
