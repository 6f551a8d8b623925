package owner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

func noService() (*controlapi.Client, error) { return nil, controlapi.ErrNotRunning }

func install(t *testing.T) (cfg, settingsPath string) {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"serve", "engine"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "serve", "server.py"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "engine", "strata"), nil, 0o755)
	cfg = filepath.Join(root, "strata-t.json")
	os.WriteFile(cfg, []byte(`{"exe": "engine/strata", "args": []}`+"\n"), 0o644)
	return cfg, filepath.Join(t.TempDir(), "settings.json")
}

// The whole-settings save sets every field it can (a switch put back to
// its default is sent as such, not left as it was) and names any field it
// cannot set instead of dropping it.
func TestSaveSettingsDropsNothingSilently(t *testing.T) {
	cfg, sp := install(t)
	no := false
	cur := &settings.Settings{StrataRoot: filepath.Dir(cfg), ConfigPath: cfg, Vision: settings.PlacementOff, Notifications: &no,
		Extra: map[string]json.RawMessage{"port": json.RawMessage("9000")}}
	if err := cur.Save(sp); err != nil {
		t.Fatal(err)
	}
	o := Owner{SettingsPath: sp, NewClient: noService}
	ctx := context.Background()

	// Notifications back to their default (nil: on), e.g. a rollback to
	// settings that never set them.
	n := &settings.Settings{StrataRoot: filepath.Dir(cfg), ConfigPath: cfg, Vision: settings.PlacementOff,
		Extra: map[string]json.RawMessage{"port": json.RawMessage("9000")}}
	if err := o.SaveSettings(ctx, n); err != nil {
		t.Fatal(err)
	}
	after, _ := settings.Load(sp)
	if !after.NotificationsOn() {
		t.Fatal("notifications stayed off: the reset to the default was dropped")
	}

	// A key the owner's calls cannot set (one this version does not know):
	// an error that names it.
	n.Extra = map[string]json.RawMessage{"port": json.RawMessage("9100")}
	err := o.SaveSettings(ctx, n)
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Fatalf("a port the calls cannot set: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// The whole-settings save keeps the trial pictures measured in this run
// (the wizard's Pictures page: settings.Measured), one record per place,
// and leaves a place measured before and not now as it was. (The wine
// walk of the Windows setup found them dropped at Apply.)
func TestSaveSettingsKeepsMeasured(t *testing.T) {
	cfg, sp := install(t)
	gpu := settings.Measurement{PictureS: 1.4, StartS: 2.9, When: "2026-12-01T10:00:00Z", Device: "GPU 0 (NVIDIA GeForce RTX 4080)"}
	cur := &settings.Settings{StrataRoot: filepath.Dir(cfg), ConfigPath: cfg, Vision: settings.PlacementOff}
	cur.SetMeasured(settings.PlacementGPU, gpu)
	if err := cur.Save(sp); err != nil {
		t.Fatal(err)
	}
	o := Owner{SettingsPath: sp, NewClient: noService}
	n := &settings.Settings{StrataRoot: filepath.Dir(cfg), ConfigPath: cfg, Vision: settings.PlacementOff}
	n.SetMeasured(settings.PlacementGPU, gpu)
	cpu := settings.Measurement{PictureS: 0.73, StartS: 0.44, When: "2026-12-05T12:22:00Z", Device: "this PC's CPU, 1 thread"}
	n.SetMeasured(settings.PlacementCPU, cpu)
	if err := o.SaveSettings(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	after, err := settings.Load(sp)
	if err != nil {
		t.Fatal(err)
	}
	if m := after.LastMeasured(settings.PlacementCPU); m == nil || m.PictureS != cpu.PictureS || m.StartS != cpu.StartS || m.When != cpu.When || m.Device != cpu.Device {
		t.Errorf("the CPU's trial after the save: %+v, want %+v", m, cpu)
	}
	if m := after.LastMeasured(settings.PlacementGPU); m == nil || m.PictureS != gpu.PictureS || m.When != gpu.When {
		t.Errorf("the GPU's earlier trial after the save: %+v, want %+v", m, gpu)
	}
	if m := after.LastMeasured(settings.PlacementRemote); m != nil {
		t.Errorf("a second PC's trial appeared: %+v", m)
	}
}
