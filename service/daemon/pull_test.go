package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/testenv"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Issue 34: Strata's history rewritten upstream (#1276) and a local edit
// to a tracked file: the move to origin/main fails, and each retry used to
// make another pre-cleanup-backup branch. One backup branch per state of
// the checkout.
func TestOneBackupBranchPerCheckoutState(t *testing.T) {
	testenv.LookPath(t, "git")
	base := t.TempDir()
	work := filepath.Join(base, "work")
	os.MkdirAll(work, 0o755)
	gitT(t, work, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "setup.py"), []byte("v1\n"), 0o644)
	gitT(t, work, "add", ".")
	gitT(t, work, "commit", "--quiet", "-m", "v1")
	origin := filepath.Join(base, "origin.git")
	gitT(t, base, "clone", "--quiet", "--bare", work, origin)
	install := filepath.Join(base, "install")
	gitT(t, base, "clone", "--quiet", origin, install)
	// Upstream rewrites its history: a new root commit, force-pushed.
	gitT(t, work, "checkout", "--quiet", "--orphan", "new")
	os.WriteFile(filepath.Join(work, "setup.py"), []byte("v2 rewritten\n"), 0o644)
	gitT(t, work, "add", ".")
	gitT(t, work, "commit", "--quiet", "-m", "rewritten")
	gitT(t, work, "push", "--quiet", "--force", origin, "new:main")
	// A local edit to a tracked file the move would overwrite.
	os.WriteFile(filepath.Join(install, "setup.py"), []byte("v1 edited here\n"), 0o644)

	d := &Daemon{}
	acct, err := installAccount(install, "")
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	say := func(l string) { said = append(said, l) }
	for i := 0; i < 3; i++ {
		if failed := d.pull(context.Background(), acct, install, say); failed == "" {
			t.Fatalf("try %d: the move over a local edit succeeded:\n%s", i, strings.Join(said, "\n"))
		}
	}
	branches := gitT(t, install, "branch", "--list", "pre-cleanup-backup*")
	if n := len(strings.Fields(strings.ReplaceAll(branches, "*", ""))); n != 1 {
		t.Fatalf("%d backup branches after three tries:\n%s", n, branches)
	}
}
