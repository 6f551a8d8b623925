package settings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A newer companion's keys survive an edit at every depth: the top level,
// "remote" and "remote.wake", with their values (objects, arrays, numbers
// as written); the known fields at each level are changed and read back.
func TestRoundTripKeepsUnknownKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	in := `{"strata_root":"/opt/strata","vision":"remote","future_key":{"a":1,"b":[true,null]},"port":8081,
	  "remote":{"host":"pc2","port":2222,"future_remote":"x","tunnel":{"mode":"quic","mtu":1.50e3},
	    "wake":{"enabled":false,"future_wake":[1,2,3],"ports":{"udp":7}}}}`
	os.WriteFile(p, []byte(in), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Vision != PlacementRemote || s.Remote.Host != "pc2" || s.Remote.Port != 2222 || s.Remote.Wake == nil || s.Remote.Wake.Enabled {
		t.Fatalf("parsed %+v", s)
	}
	for _, ex := range []map[string]json.RawMessage{s.Extra, s.Remote.Extra, s.Remote.Wake.Extra} {
		if len(ex) != 2 {
			t.Fatalf("unknown keys: top %v, remote %v, wake %v", keys(s.Extra), keys(s.Remote.Extra), keys(s.Remote.Wake.Extra))
		}
	}
	// An edit at every level.
	s.Vision = PlacementGPU
	s.Remote.IdleStopS = 600
	s.Remote.Wake.Enabled = true
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("saved %s: %v", b, err)
	}
	var want map[string]any
	json.Unmarshal([]byte(in), &want)
	want["vision"] = "gpu"
	want["remote"].(map[string]any)["idle_stop_s"] = 600.0
	want["remote"].(map[string]any)["wake"].(map[string]any)["enabled"] = true
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("saved\n%s\nwant the same keys and values as\n%s (with the three edits)", b, in)
	}
	if !strings.Contains(string(b), "1.50e3") {
		t.Errorf("an unknown number was rewritten: %s", b)
	}
	// And again: what was kept once is kept the next time.
	s2, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(s2)
	if string(b2) != string(b) {
		t.Fatalf("a second round trip changed the file:\n%s\n%s", b, b2)
	}
}

// A key encoding/json gives to a field (it ignores case) is the field's:
// not kept beside it as an unknown one, so the file never has both.
func TestKeyInAnotherCaseIsTheField(t *testing.T) {
	var s Settings
	if err := json.Unmarshal([]byte(`{"Vision":"cpu","remote":{"HOST":"pc2","Wake":{"Enabled":true}}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Vision != PlacementCPU || s.Remote.Host != "pc2" || !s.Remote.Wake.Enabled || s.Extra != nil || s.Remote.Extra != nil || s.Remote.Wake.Extra != nil {
		t.Fatalf("parsed %+v %+v %+v", s, s.Remote, s.Remote.Wake)
	}
	s.Vision = PlacementOff
	b, _ := Encode(&s)
	if strings.Contains(string(b), "cpu") || strings.Contains(string(b), "HOST") {
		t.Fatalf("encoded %s", b)
	}
}

// Every struct the settings file is made of keeps unknown keys: a struct
// added under Settings later without an Extra and the two methods fails
// here, instead of silently dropping a newer version's keys.
func TestEveryLevelKeepsUnknownKeys(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || seen[tp] {
			return
		}
		seen[tp] = true
		if f, ok := tp.FieldByName("Extra"); !ok || f.Type != reflect.TypeOf(map[string]json.RawMessage{}) || f.Tag.Get("json") != "-" {
			t.Errorf("%s (%s) has no Extra map[string]json.RawMessage `json:\"-\"`", path, tp)
		}
		pt := reflect.PointerTo(tp)
		if !pt.Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) || !tp.Implements(reflect.TypeOf((*json.Marshaler)(nil)).Elem()) {
			t.Errorf("%s (%s) does not decode and encode through unknown.go", path, tp)
		}
		for i := 0; i < tp.NumField(); i++ {
			f := tp.Field(i)
			if f.Name != "Extra" {
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeOf(Settings{}), "Settings")
	if len(seen) < 3 {
		t.Fatalf("walked %d structs", len(seen))
	}
}

// Empty is true only when the file would hold no key: setting any one
// field (found by reflection, so a new field is covered) makes it false.
func TestEmptyFollowsTheFields(t *testing.T) {
	if !(&Settings{}).Empty() {
		t.Fatal("zero settings are not empty")
	}
	tp := reflect.TypeOf(Settings{})
	for i := 0; i < tp.NumField(); i++ {
		var s Settings
		f := reflect.ValueOf(&s).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(1)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]json.RawMessage{"k": json.RawMessage("1")}))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", tp.Field(i).Name, f.Kind())
		}
		if s.Empty() {
			t.Errorf("settings with only %s set are Empty", tp.Field(i).Name)
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
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
