package strataconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// A config on a full disk: the change is refused with the real cause (the
// disk is full, no administrator advice), and the config is left whole.
func TestFullDiskGivesTheRealCauseAndKeepsTheConfig(t *testing.T) {
	disk := testenv.SmallDisk(t, 256<<10)
	text, err := os.ReadFile(filepath.Join("testdata", "gpu-2space.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := fakestrata.NewInstall(t, filepath.Join(disk, "Strata"), fakestrata.InstallOptions{Config: string(text)})
	ch, err := PlanVision(in.Config, VisionRequest{Placement: settings.PlacementOff})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Fill(t, disk)
	_, err = ch.Apply()
	if err == nil {
		t.Fatal("Apply on a full disk succeeded")
	}
	if !strings.Contains(err.Error(), "the disk holding "+in.Root+" is full") || strings.Contains(err.Error(), "administrator") {
		t.Fatalf("Apply on a full disk: %v", err)
	}
	if got, _ := os.ReadFile(in.Config); !bytes.Equal(got, ch.Old) {
		t.Fatal("the config changed although the write failed")
	}
}
