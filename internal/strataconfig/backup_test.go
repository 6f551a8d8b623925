package strataconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

func pinClock(t *testing.T, at time.Time) {
	old := now
	now = func() time.Time { return at }
	t.Cleanup(func() { now = old })
}

func TestBackupsKeepTheLastFiveAndLeaveStratasOwn(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	strataBak := in.Config + ".bak"
	if err := os.WriteFile(strataBak, []byte(`{"written by": "Strata's setup"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// All in one second: the names must still be unique and ordered.
	pinClock(t, time.Date(2026, 11, 29, 16, 25, 1, 0, time.UTC))
	var versions [][]byte
	for i := 0; i < 7; i++ {
		pl := settings.PlacementCPU
		if i%2 == 1 {
			pl = settings.PlacementGPU
		}
		r := req(base, pl)
		r.Threads = 1 + i // a different file each time
		ch := apply(t, in.Config, r)
		versions = append(versions, ch.Old)
	}
	bs := listBackups(in.Config)
	var ours []string
	for _, b := range bs {
		if !b.strata {
			ours = append(ours, filepath.Base(b.path))
		}
	}
	if len(ours) != KeepBackups {
		t.Fatalf("backups = %v, want %d of ours", ours, KeepBackups)
	}
	if ours[0] != "strata-iq2_xs.json.bak-20261129T162501Z-7" || ours[4] != "strata-iq2_xs.json.bak-20261129T162501Z-3" {
		t.Fatalf("backups = %v", ours)
	}
	newest, _ := os.ReadFile(filepath.Join(filepath.Dir(in.Config), ours[0]))
	if !bytes.Equal(newest, versions[6]) {
		t.Fatal("the newest backup is not the file before the last change")
	}
	if b, _ := os.ReadFile(strataBak); string(b) != `{"written by": "Strata's setup"}` {
		t.Fatal("Strata's own .bak was touched")
	}
}

func TestRestorePutsTheNewestBackBackAndTwiceUndoesIt(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	orig, _ := os.ReadFile(in.Config)
	pinClock(t, time.Date(2026, 11, 29, 16, 25, 1, 0, time.UTC))
	ch := apply(t, in.Config, req(base, settings.PlacementCPU))

	from, err := Restore(in.Config)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(in.Config)
	if !bytes.Equal(got, orig) || !strings.HasSuffix(from, ".bak-20261129T162501Z") {
		t.Fatalf("restored from %s:\n%s", from, got)
	}
	if _, err := Restore(in.Config); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(in.Config)
	if !bytes.Equal(got, ch.New) {
		t.Fatal("a second restore should undo the first")
	}
}

func TestRestoreUsesStratasBakAndSkipsBrokenBackups(t *testing.T) {
	in, _ := fixture(t, "gpu-2space.json", false)
	if _, err := Restore(in.Config); err == nil || !strings.Contains(err.Error(), "no backup of "+in.Config) {
		t.Fatalf("err = %v", err)
	}
	old := []byte("{\"port\": 8081}\n")
	os.WriteFile(in.Config+".bak", old, 0o644)
	os.Chtimes(in.Config+".bak", time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	// A newer backup of ours that is cut short must be skipped.
	os.WriteFile(in.Config+".bak-20991231T000000Z", []byte(`{"port": 80`), 0o644)
	from, err := Restore(in.Config)
	if err != nil || from != in.Config+".bak" {
		t.Fatalf("restored from %q, %v", from, err)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, old) {
		t.Fatalf("got %s", got)
	}
}

func TestApplyRefusesAFileChangedSincePlan(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	ch, err := PlanVision(in.Config, req(base, settings.PlacementOff))
	if err != nil {
		t.Fatal(err)
	}
	edited := append(append([]byte{}, ch.Old...), ' ')
	os.WriteFile(in.Config, edited, 0o644)
	if _, err := ch.Apply(); !errors.Is(err, ErrChangedOnDisk) || !strings.Contains(err.Error(), "since this change was planned") {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, edited) || len(listBackups(in.Config)) != 0 {
		t.Fatal("the file or its backups were touched")
	}
}

// A person's edit saved after Apply's first check but before the rename
// (the last moment) is refused, not lost: the file keeps it.
func TestApplyRefusesAnEditMadeRightBeforeTheRename(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	ch, err := PlanVision(in.Config, req(base, settings.PlacementOff))
	if err != nil {
		t.Fatal(err)
	}
	edited := append(append([]byte{}, ch.Old...), '\n')
	old := writeFile
	writeFile = func(path string, data []byte, perm os.FileMode, check func() error) error {
		if path == in.Config {
			// The person saves while the temporary file is being written.
			os.WriteFile(in.Config, edited, 0o644)
		}
		return old(path, data, perm, check)
	}
	defer func() { writeFile = old }()
	_, err = ch.Apply()
	if !errors.Is(err, ErrChangedOnDisk) || !strings.Contains(err.Error(), "edit is kept") {
		t.Fatalf("err = %v, want a refusal that keeps the edit", err)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, edited) {
		t.Fatal("the person's edit was lost")
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(in.Config), ".*.tmp-*")); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

func TestApplyKeepsTheFileMode(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	os.Chmod(in.Config, 0o640)
	apply(t, in.Config, req(base, settings.PlacementCPU))
	for _, p := range append([]string{in.Config}, Backups(in.Config)...) {
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
			t.Fatalf("%s mode %v, want 0640 (the config may hold an api_key)", p, st.Mode().Perm())
		}
	}
}

func TestAWriteErrorLeavesTheOldFileWhole(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	orig, _ := os.ReadFile(in.Config)
	old := writeFile
	writeFile = func(path string, data []byte, perm os.FileMode, check func() error) error {
		if path == in.Config {
			return errors.New("disk full")
		}
		return old(path, data, perm, check)
	}
	defer func() { writeFile = old }()
	ch, _ := PlanVision(in.Config, req(base, settings.PlacementCPU))
	backup, err := ch.Apply()
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "unchanged") {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, orig) {
		t.Fatal("the config changed")
	}
	if b, _ := os.ReadFile(backup); !bytes.Equal(b, orig) {
		t.Fatal("the backup is not the old file")
	}
}
