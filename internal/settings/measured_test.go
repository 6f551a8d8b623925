package settings

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMeasurementsRoundTrip: a record per placement survives a save and a
// load, a newer companion's key inside one is kept, and a record that
// cannot be a measurement is refused.
func TestMeasurementsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	when := time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)
	s := &Settings{Vision: PlacementCPU}
	if !s.SetMeasured(PlacementCPU, Measurement{PictureS: 14.2, StartS: 3.1, When: WhenString(when), StrataVersion: "0.9.3", Device: "this PC's CPU, 8 threads", Tokens: 300}) || s.SetMeasured(PlacementOff, Measurement{}) {
		t.Fatal("SetMeasured")
	}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := got.LastMeasured(PlacementCPU)
	if m == nil || m.PictureS != 14.2 || !m.Time().Equal(when) || got.LastMeasured(PlacementGPU) != nil {
		t.Fatalf("loaded %+v", got.Measured)
	}
	if sum := m.Summary(); !strings.HasPrefix(sum, "14.2 s per picture, start 3.1 s (measured ") || !strings.HasSuffix(sum, ", Strata 0.9.3)") {
		t.Errorf("summary %q", sum)
	}
	w := WhenString(when)
	var raw map[string]any
	json.Unmarshal([]byte(`{"measured": {"cpu": {"picture_s": 1, "start_s": 0, "when": "2026-12-05T09:30:00Z", "watts": 65}}}`), &raw)
	b, _ := json.Marshal(raw)
	var n Settings
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	out, _ := Encode(&n)
	if !strings.Contains(string(out), `"watts": 65`) {
		t.Errorf("a newer key in a measurement was dropped:\n%s", out)
	}
	for _, bad := range []Measurement{{PictureS: 0, When: w}, {PictureS: -1, When: w}, {PictureS: math.NaN(), When: w}, {PictureS: 1, StartS: -2, When: w}, {PictureS: 1}, {PictureS: 1, When: "yesterday"}} {
		if bad.Check() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if (Measurement{PictureS: 0.41, When: w}).Check() != nil {
		t.Error("refused a good record")
	}
	if Secs(0.414) != "0.41 s" || Secs(14.23) != "14.2 s" || Secs(111.4) != "111 s" {
		t.Errorf("Secs: %s %s %s", Secs(0.414), Secs(14.23), Secs(111.4))
	}
}
