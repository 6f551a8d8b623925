//go:build linux

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/service/daemon"
)

// gitRun runs git in dir and fails the test on an error.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// release publishes Strata version v on the install's origin: a setup.py
// whose MIN_ENGINE is v and a CMakeLists.txt that says it.
func release(t *testing.T, work, bin, v string) {
	t.Helper()
	gitRun(t, work, "pull", "--ff-only", "--quiet")
	os.WriteFile(filepath.Join(work, "setup.py"), []byte(fakestrata.SetupPy(bin, v)), 0o644)
	os.WriteFile(filepath.Join(work, "CMakeLists.txt"), []byte("project(strata VERSION "+v+" LANGUAGES C CXX)\n"), 0o644)
	gitRun(t, work, "commit", "--quiet", "-am", "Strata "+v)
	gitRun(t, work, "push", "--quiet", "origin", "main")
}

// updatableInstall is a stand-in install at engine 0.1.43 that is a git
// checkout of an origin (a bare repository) with 0.1.44 released on it.
func updatableInstall(t *testing.T) (r *fakestrata.Root, work, bin string) {
	t.Helper()
	testenv.LookPath(t, "git")
	r = fakestrata.NewRoot(t, fakestrata.RootOptions{})
	if err := r.Updatable("0.1.43"); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(r.Dir, ".venv", "bin", "strata-standin")
	os.WriteFile(filepath.Join(r.Dir, "model-test.gguf"), []byte("GGUF"), 0o644)
	os.WriteFile(filepath.Join(r.Dir, "CMakeLists.txt"), []byte("project(strata VERSION 0.1.43 LANGUAGES C CXX)\n"), 0o644)
	os.WriteFile(filepath.Join(r.Dir, ".gitignore"), []byte(".venv/\nengine/\ntmp/\n*.log\n*.gguf\nstandin-*\nstrata-*.json\n"), 0o644)
	gitRun(t, r.Dir, "init", "--quiet", "-b", "main")
	gitRun(t, r.Dir, "add", ".")
	gitRun(t, r.Dir, "commit", "--quiet", "-m", "Strata 0.1.43")
	origin := filepath.Join(t.TempDir(), "origin.git")
	gitRun(t, r.Dir, "clone", "--quiet", "--bare", r.Dir, origin)
	gitRun(t, r.Dir, "remote", "add", "origin", origin)
	gitRun(t, r.Dir, "fetch", "--quiet", "origin")
	gitRun(t, r.Dir, "branch", "--quiet", "--set-upstream-to=origin/main", "main")
	work = filepath.Join(t.TempDir(), "work")
	gitRun(t, filepath.Dir(work), "clone", "--quiet", origin, work)
	release(t, work, bin, "0.1.44")
	return r, work, bin
}

// The check: with a stand-in setup.py that behaves as Strata's (a
// running engine is kept, it still says "updated" and exits 0),
// `update-strata --yes` ends with the new version running and says 0.1.43
// -> 0.1.44; a failing update (an engine kept in use) leaves the old one
// running, exits non-zero and says why; a setup that stops after replacing
// the engine has it rolled back, and the old one runs.
func TestUpdateStrata(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r, work, bin := updatableInstall(t)
	c, _, _ := runService(t, "--strata-root", r.Dir, "--config", r.Config)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	if st, _ := c.State(ctx); st.Server.Version != "0.1.43" {
		t.Fatalf("the running version: %q", st.Server.Version)
	}
	if code, out := cliRun("status"); !strings.Contains(out, "Strata 0.1.43") {
		t.Errorf("status (%d) does not say the version:\n%s", code, out)
	}

	// Strata's own update beside the running server keeps the engine and
	// says it updated (what the service must not trust).
	gitRun(t, r.Dir, "pull", "--ff-only", "--quiet") // setup.py's MIN_ENGINE is 0.1.44 now
	cmd := exec.Command(r.Python, "setup.py", "--update")
	cmd.Dir = r.Dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "engine 0.1.43 is in use") || !strings.Contains(string(out), "Strata is updated") {
		t.Fatalf("the stand-in setup beside a running engine: %v\n%s", err, out)
	}
	if b := daemon.ReadBuild(r.Dir); b.Version != "0.1.43" {
		t.Fatalf("the running engine was replaced: %+v", b)
	}

	code, out2 := cliRun("update-strata", "--check")
	if code != 0 || !strings.Contains(out2, "engine 0.1.43 is older than the 0.1.44") && !strings.Contains(out2, "available") {
		t.Fatalf("update-strata --check: %d\n%s", code, out2)
	}
	code, out2 = cliRun("update-strata", "--yes")
	if code != 0 || !strings.Contains(out2, "0.1.43 -> 0.1.44") || !strings.Contains(out2, "[ok] engine 0.1.44 installed") {
		t.Fatalf("update-strata --yes: %d\n%s", code, out2)
	}
	st, _ := c.State(ctx)
	if st.Server.Version != "0.1.44" || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the update: %+v", st.Server)
	}
	if code, out2 = cliRun("update-strata", "--check"); code != 0 || !strings.Contains(out2, "up to date") {
		t.Fatalf("a check after the update: %d\n%s", code, out2)
	}

	// 0.1.45, but an engine left running holds engine/strata: the update
	// fails, says why, and 0.1.44 runs again.
	release(t, work, bin, "0.1.45")
	held := exec.Command(filepath.Join(r.Dir, "engine", "strata"), "--standin-engine")
	stdin, _ := held.StdinPipe()
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	code, out2 = cliRun("update-strata", "--yes")
	stdin.Close()
	held.Wait()
	if code == 0 || !strings.Contains(out2, "in use") || !strings.Contains(out2, "Strata runs engine 0.1.44 again") {
		t.Fatalf("update-strata with the engine held: %d\n%s", code, out2)
	}
	if st, _ := c.State(ctx); st.Server.Version != "0.1.44" || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the failed update: %+v", st.Server)
	}

	// The setup stops ([X]) after it replaced the engine: rolled back.
	os.WriteFile(filepath.Join(r.Dir, fakestrata.SetupModeFile), []byte("migrate-fails"), 0o644)
	code, out2 = cliRun("update-strata", "--yes")
	if code == 0 || !strings.Contains(out2, "[X]") || !strings.Contains(out2, "--rollback-engine") || !strings.Contains(out2, "old engine was put back") {
		t.Fatalf("update-strata with a failing setup: %d\n%s", code, out2)
	}
	if b := daemon.ReadBuild(r.Dir); b.Version != "0.1.44" {
		t.Fatalf("the engine after the rollback: %+v", b)
	}
	if st, _ := c.State(ctx); st.Server.Version != "0.1.44" || st.Server.Phase != controlapi.PhaseReady {
		t.Fatalf("after the rollback: %+v", st.Server)
	}

	// Issue 34: Strata's setup refuses the engine download ("[!]  keeping
	// the engine that is installed: ...", exit 0): not "updated"; its own
	// line quoted; the exit status follows; --check gives that reason.
	release(t, work, bin, "0.1.46")
	os.WriteFile(filepath.Join(r.Dir, fakestrata.SetupModeFile), []byte("download-refused"), 0o644)
	code, out2 = cliRun("update-strata", "--yes")
	if code == 0 || !strings.Contains(out2, `Strata's setup said "[!]  keeping the engine that is installed:`) || !strings.Contains(out2, "engine was not updated: it stays 0.1.44") || strings.Contains(out2, "were updated") {
		t.Fatalf("update-strata with the download refused: %d\n%s", code, out2)
	}
	if !strings.Contains(out2, "Strata's files were pulled") {
		t.Errorf("the refused update does not say the files were pulled:\n%s", out2)
	}
	code, out2 = cliRun("update-strata", "--check")
	if !strings.Contains(out2, "keeping the engine that is installed") || strings.Contains(out2, "while it ran") {
		t.Errorf("--check after a refused download (%d) does not give the true reason:\n%s", code, out2)
	}
	os.Remove(filepath.Join(r.Dir, fakestrata.SetupModeFile))

	// No git for the account that updates Strata: said so, not "offline?".
	t.Setenv("PATH", t.TempDir())
	code, out2 = cliRun("update-strata", "--check")
	if code == 0 || !strings.Contains(out2, "git is not installed for the account that updates Strata") || strings.Contains(out2, "offline") {
		t.Errorf("update-strata --check without git: %d\n%s", code, out2)
	}
}
