package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTripKeepsUnknownKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(p, []byte(`{"strata_root":"/opt/strata","vision":"remote","future_key":{"a":1},"remote":{"host":"pc2","port":2222}}`), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Vision != PlacementRemote || s.Remote.Host != "pc2" || s.Remote.Port != 2222 {
		t.Fatalf("parsed %+v", s)
	}
	s.Vision = PlacementGPU
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"future_key": {`) || !strings.Contains(string(b), `"vision": "gpu"`) {
		t.Fatalf("saved %s", b)
	}
}

func TestMissingFileIsEmptyAndGarbageIsAClearError(t *testing.T) {
	dir := t.TempDir()
	s, err := Load(filepath.Join(dir, "none.json"))
	if err != nil || s.StrataRoot != "" || !s.NotificationsOn() {
		t.Fatalf("got %+v, %v", s, err)
	}
	p := filepath.Join(dir, "bad.json")
	os.WriteFile(p, []byte(`{"vision":`), 0o644)
	_, err = Load(p)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("want an error naming the file, got %v", err)
	}
}
