//go:build unix

package strataconfig

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/settings"
)

// The crash test: a real process applies a change and is killed (SIGKILL)
// after the new file is complete on disk and before the rename. The old file
// must be whole, its backup present, and the next change must work.
const crashEnv = "STRATACONFIG_CRASH_CHILD"

func TestCrashBetweenWriteAndRenameLeavesTheOldFileWhole(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		crashChild()
		return
	}
	in, base := fixture(t, "gpu-2space.json", false)
	orig, _ := os.ReadFile(in.Config)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashBetweenWriteAndRenameLeavesTheOldFileWhole$")
	cmd.Env = append(os.Environ(), crashEnv+"="+in.Config)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed mid-write: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(in.Config)
	if !bytes.Equal(got, orig) {
		t.Fatalf("the config is not the old file after the crash:\n%s", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(in.Config))
	var tmp string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".strata-iq2_xs.json.tmp-") {
			tmp = e.Name()
		}
	}
	if tmp == "" {
		t.Fatal("the child did not get as far as the temporary file")
	}
	bs := Backups(in.Config)
	if len(bs) != 1 {
		t.Fatalf("backups = %v (a leftover temporary file must not count)", bs)
	}
	if b, _ := os.ReadFile(bs[0]); !bytes.Equal(b, orig) {
		t.Fatal("the backup is not the old file")
	}
	c, err := Read(in.Config)
	if err != nil || c.Err() != nil || c.Placement() != settings.PlacementGPU {
		t.Fatalf("after the crash: %v %v", err, c.Err())
	}
	apply(t, in.Config, req(base, settings.PlacementCPU))
	if c, _ := Read(in.Config); c.Placement() != settings.PlacementCPU {
		t.Fatal("the next change did not apply")
	}
}

// crashChild runs in the child process: the real atomic write, except that
// the process dies where atomicfile would rename.
func crashChild() {
	config := os.Getenv(crashEnv)
	writeFile = func(path string, data []byte, perm os.FileMode, check func() error) error {
		if path != config {
			return atomicfile.WriteChecked(path, data, perm, check)
		}
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
		if err != nil {
			return err
		}
		f.Write(data)
		f.Sync()
		f.Close()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	ch, err := PlanVision(config, VisionRequest{Placement: settings.PlacementCPU})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(3)
	}
	ch.Apply()
	os.Exit(4)
}
