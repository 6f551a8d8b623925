package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const envScratchHelper = "STRATA_TEST_SCRATCH_HELPER"

// TestScratchHelper is the agent's user's side (run as nobody): it cleans
// the stale scratch folders of the parent it is told, and removes the
// path it is told as the fallback would (a folder replaced by a link
// between the listing and the removal).
func TestScratchHelper(t *testing.T) {
	v := os.Getenv(envScratchHelper)
	if v == "" {
		t.Skip("run by TestScratchCleanupTouchesOnlyItsOwnFolders")
	}
	parent, link, _ := strings.Cut(v, ",")
	a := &agent{cfg: Config{ScratchParent: parent}}
	a.cleanStaleScratch()
	removeTree(link)
}

// Issue 32, Medium: the second PC's agent deleted its user's files through
// another local account's symlink: its scratch cleanup fell back to
// reading a folder through a link when removal failed. Now it touches only
// its own account's real folders: another account's scratch-named folder
// and a link are left alone, and the user's files stay.
func TestScratchCleanupTouchesOnlyItsOwnFolders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: two accounts (the agent's user and another)")
	}
	base := t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	parent := filepath.Join(base, "tmp") // as /tmp: everyone writes, sticky
	os.Mkdir(parent, 0o777)
	os.Chmod(parent, os.ModeSticky|0o777)
	// The agent's user (nobody) and its files.
	victim := filepath.Join(base, "home")
	os.Mkdir(victim, 0o755)
	os.WriteFile(filepath.Join(victim, "thesis.txt"), []byte("years of work"), 0o644)
	os.Chown(victim, 65534, 65534)
	os.Chown(filepath.Join(victim, "thesis.txt"), 65534, 65534)
	// A dead agent's pid.
	dead := exec.Command("true")
	dead.Run()
	pid := strconv.Itoa(dead.Process.Pid)
	// Another account (daemon, uid 1): a scratch-named folder of its own,
	// and in it a link to the user's folder.
	other := filepath.Join(parent, ScratchPrefix+pid+"-other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "theirs.txt"), []byte("x"), 0o644)
	link := filepath.Join(other, "sub")
	os.Symlink(victim, link)
	for _, p := range []string{other, filepath.Join(other, "theirs.txt"), link} {
		os.Lchown(p, 1, 1)
	}
	// The user's own stale scratch folder: cleaned.
	mine := filepath.Join(parent, ScratchPrefix+pid+"-mine")
	os.Mkdir(mine, 0o700)
	os.WriteFile(filepath.Join(mine, "1.png"), []byte("x"), 0o600)
	os.Chown(mine, 65534, 65534)
	os.Chown(filepath.Join(mine, "1.png"), 65534, 65534)

	self, _ := os.Executable()
	bin := filepath.Join(base, "agent.test")
	b, _ := os.ReadFile(self)
	os.WriteFile(bin, b, 0o755)
	cmd := exec.Command(bin, "-test.run=^TestScratchHelper$")
	cmd.Env = append(os.Environ(), envScratchHelper+"="+parent+","+link)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the helper: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(victim, "thesis.txt")); err != nil {
		t.Fatalf("the user's file went through another account's link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "theirs.txt")); err != nil {
		t.Fatalf("another account's folder was touched: %v", err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatalf("the user's own stale scratch folder is still there: %v", err)
	}
}
