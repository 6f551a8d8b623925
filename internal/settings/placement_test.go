package settings

import "testing"

// TestPlacementsTable: every valid placement has one row, with its words
// and what moving to it does; the words the tray, the CLI and the backend
// show come from it.
func TestPlacementsTable(t *testing.T) {
	seen := map[Placement]bool{}
	for _, p := range Placements {
		if !p.ID.Valid() || seen[p.ID] || p.Name == "" || p.Short == "" || p.Where == "" {
			t.Errorf("row %+v", p)
		}
		seen[p.ID] = true
	}
	for _, p := range []Placement{PlacementGPU, PlacementCPU, PlacementRemote, PlacementOff} {
		if !seen[p] {
			t.Errorf("no row for %s", p)
		}
	}
	if PlacementGPU.Info().RelayRouted || !PlacementGPU.Info().EditsConfig || !PlacementRemote.Info().RelayRouted || PlacementCPU.Info().EditsConfig {
		t.Error("only this PC's GPU edits the config; the others are routed by the relay")
	}
	if got := PlacementRemote.Words("gpu-laptop"); got != "on the second PC (gpu-laptop)" {
		t.Errorf("Words %q", got)
	}
	if got := PlacementCPU.ShortName(""); got != "the CPU" {
		t.Errorf("ShortName %q", got)
	}
}
