package settings

import "testing"

// TestPlacementsTable: every valid placement has one row, with its words
// and what moving to it does; the words the tray, the CLI and the backend
// show come from it.
func TestPlacementsTable(t *testing.T) {
	seen := map[Placement]bool{}
	for _, p := range Placements {
		if !p.ID.Valid() || seen[p.ID] || p.Name == "" || p.Short == "" || p.Menu == "" || p.Label == "" || p.Where == "" {
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
	if got := PlacementRemote.MenuName("gpu-laptop"); got != "second PC (gpu-laptop)" {
		t.Errorf("MenuName %q", got)
	}
	for p, want := range map[Placement]string{PlacementGPU: "pictures are read on this PC's GPU", PlacementOff: "pictures are off (text only)", "": "pictures are off (text only)"} {
		if got := p.Pictures(""); got != want {
			t.Errorf("%q.Pictures: %q, want %q", p, got, want)
		}
	}
	// Only off (and an unset or unknown placement) reads no pictures; only
	// the second PC needs one; only this PC's GPU takes its VRAM.
	if m := Measurable(); len(m) != 3 || m[0] != PlacementGPU || m[1] != PlacementCPU || m[2] != PlacementRemote {
		t.Errorf("Measurable %v", m)
	}
	for _, p := range Placements {
		if p.ReadsPictures != (p.ID != PlacementOff) || p.SecondPC != (p.ID == PlacementRemote) || p.UsesVRAM != (p.ID == PlacementGPU) {
			t.Errorf("row %+v", p)
		}
	}
	if Placement("").ReadsPictures() || Placement("tpu").ReadsPictures() {
		t.Error("an unset or unknown placement reads pictures")
	}
}
