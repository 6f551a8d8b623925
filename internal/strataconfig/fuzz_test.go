package strataconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
)

// decodeLoose decodes with json.Number so huge numbers still compare.
func decodeLoose(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, bom)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// unownedLoose is unowned() for any input, without failing the test.
func unownedLoose(b []byte) (map[string]any, bool) {
	v, err := decodeLoose(b)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, false
	}
	stripOwned(m)
	return m, true
}

// FuzzEdit: no input crashes the editor; whatever it writes is JSON whose
// keys the companion does not own are unchanged; applying the same placement
// twice changes nothing the second time; and a file the edit does not concern
// comes back byte for byte.
func FuzzEdit(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		b = bytes.ReplaceAll(b, []byte("@ROOT@"), []byte("/s"))
		b = bytes.ReplaceAll(b, []byte("@MODELS@"), []byte("/s/models"))
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `{"vision":null}`, `{"args":[]}`, `{"env":{}}`, "\xef\xbb\xbf{\"a\":1}", `{"vision":{"mmproj":"m","model":"x"}}`,
		`{"args":["--vision","--vram-reserve-mib"]}`, `{"vision":{"mmproj":"m","model":"x","exe":"/r/strata-vision-relay"},"env":{"STRATA_COMPANION_SETTINGS":"s"}}`,
		`[]`, `"x"`, `{"a":1e999}`, `{"args":["--vision","--vision"]}`, " {\n\t\"args\" : [ ] ,\"vision\" :{ \"mmproj\":\"a\" , \"model\":\"b\"}}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	relay := filepath.Join(dir, "strata-vision-relay")
	os.WriteFile(relay, nil, 0o755)
	config := filepath.Join(dir, "Strata", "strata-x.json") // no install: no backups, no models
	placements := []settings.Placement{settings.PlacementGPU, settings.PlacementCPU, settings.PlacementRemote, settings.PlacementOff}
	f.Fuzz(func(t *testing.T, in []byte) {
		valid := json.Valid(bytes.TrimPrefix(in, bom))
		d, err := parse(in)
		if err != nil && strings.Contains(err.Error(), "nested too deeply") {
			return // valid JSON the editor declines: no Strata config nests that deep
		}
		if (err == nil) != (valid && len(bytes.TrimSpace(bytes.TrimPrefix(in, bom))) > 0) {
			t.Fatalf("parse error %v for valid=%v", err, valid)
		}
		if err == nil && (d.root.start < 0 || d.root.end > len(in)) {
			t.Fatal("span out of range")
		}
		for _, pl := range placements {
			p := &planner{path: config, root: filepath.Dir(config), req: VisionRequest{Placement: pl, RelayExe: relay, SettingsPath: "/etc/s.json", Threads: 2}}
			out, err := p.plan(in)
			if err != nil {
				continue
			}
			if !json.Valid(bytes.TrimPrefix(out, bom)) {
				t.Fatalf("%s wrote invalid JSON from %q:\n%q", pl, in, out)
			}
			a, ok1 := unownedLoose(in)
			b, ok2 := unownedLoose(out)
			if ok1 && ok2 && !reflect.DeepEqual(a, b) {
				t.Fatalf("%s changed keys it does not own:\n%q\n->\n%q", pl, in, out)
			}
			if !bytes.HasPrefix(out, in[:bodyStart(in)]) {
				t.Fatal("the byte-order mark was lost")
			}
			p2 := &planner{path: config, root: filepath.Dir(config), req: p.req}
			again, err := p2.plan(out)
			if err != nil {
				t.Fatalf("%s: its own output is refused: %v\n%q", pl, err, out)
			}
			if !bytes.Equal(again, out) {
				t.Fatalf("%s twice is not the same as once:\n%q\n%q", pl, out, again)
			}
			if pl == settings.PlacementOff {
				c, _ := fromBytes(config, in)
				if c != nil && c.Vision == nil && !strings.Contains(string(in), `"--vision"`) && !strings.Contains(string(in), `"vision"`) && !bytes.Equal(in, out) {
					t.Fatalf("off changed a file without vision:\n%q\n%q", in, out)
				}
			}
		}
	})
}
