package backend

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
)

// smallDisk mounts a 256 KiB tmpfs (a real full disk) and returns a
// function that fills it.
func smallDisk(t *testing.T) (dir string, fill func()) {
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir, func() {
		f, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				return
			}
		}
	}
}

// The config's disk is full: the change fails naming that folder, the
// config is unchanged and the settings are put back.
func TestFullDiskUnderTheConfig(t *testing.T) {
	disk, fill := smallDisk(t)
	in := fakestrata.NewInstall(t, disk, fakestrata.InstallOptions{Config: gpuConfig})
	sp := filepath.Join(t.TempDir(), "settings.json")
	(&settings.Settings{Vision: settings.PlacementGPU, StrataRoot: in.Root, ConfigPath: in.Config}).Save(sp)
	beforeS, _ := os.ReadFile(sp)
	beforeC, _ := os.ReadFile(in.Config)
	b := New(Options{SettingsPath: sp, StrataRoot: in.Root, ConfigPath: in.Config, RelayExe: in.Relay})
	fill()
	_, err := b.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu"})
	if err == nil || !strings.Contains(err.Error(), "the disk holding "+filepath.Dir(in.Config)+" is full") || strings.Contains(err.Error(), "administrator") {
		t.Fatalf("err = %v", err)
	}
	if c, _ := os.ReadFile(in.Config); !bytes.Equal(c, beforeC) {
		t.Fatal("the config changed")
	}
	if s, _ := os.ReadFile(sp); !bytes.Equal(s, beforeS) {
		t.Fatalf("the settings were not put back:\n%s", s)
	}
}

// The settings' disk is full: nothing is written at all.
func TestFullDiskUnderTheSettings(t *testing.T) {
	disk, fill := smallDisk(t)
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: gpuConfig})
	sp := filepath.Join(disk, "settings.json")
	beforeC, _ := os.ReadFile(in.Config)
	b := New(Options{SettingsPath: sp, StrataRoot: in.Root, ConfigPath: in.Config, RelayExe: in.Relay})
	// The lock file exists before the disk fills (it is created once).
	if _, err := b.Update(context.Background(), "create", func(*settings.Settings) error { return nil }); err != nil {
		t.Fatal(err)
	}
	fill()
	_, err := b.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu"})
	if err == nil || !strings.Contains(err.Error(), "the disk holding "+disk+" is full") {
		t.Fatalf("err = %v", err)
	}
	if c, _ := os.ReadFile(in.Config); !bytes.Equal(c, beforeC) {
		t.Fatal("the config changed although the settings could not be saved")
	}
}

func TestPermissionAdviceDependsOnRights(t *testing.T) {
	old := elevated
	defer func() { elevated = old }()
	err := &fs.PathError{Op: "open", Path: "/etc/x", Err: fs.ErrPermission}
	elevated = func() bool { return true }
	if e := explain(err, "/etc/x/settings.json"); strings.Contains(e.Error(), "administrator") || !errors.Is(e, fs.ErrPermission) {
		t.Fatalf("elevated: %v", e)
	}
	elevated = func() bool { return false }
	if e := explain(err, "/etc/x/settings.json"); !strings.Contains(e.Error(), "administrator") {
		t.Fatalf("not elevated: %v", e)
	}
}
