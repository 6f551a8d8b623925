package strataconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/settings"
)

// shapes are real-shaped configs of several Strata versions (testdata/).
var shapes = []struct {
	file    string
	placing settings.Placement // where the file runs the encoder
	windows bool               // Windows paths: mapped into the install by statFile
}{
	{"gpu-2space.json", settings.PlacementGPU, false},
	{"novision-4space-env.json", settings.PlacementOff, false},
	{"windows-cpu-crlf.json", settings.PlacementCPU, true},
	{"compact-novision.json", settings.PlacementOff, false},
	{"remote-fork-tabs.json", settings.PlacementRemote, false},
	{"relative-cpu.json", settings.PlacementCPU, false},
}

// fixture builds an install holding testdata/file as its config.
func fixture(t *testing.T, file string, windows bool) (*fakestrata.Install, VisionRequest) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: string(text), Windows: windows})
	if windows {
		mapWindowsPaths(t, in.Root)
	}
	return in, VisionRequest{RelayExe: in.Relay, SettingsPath: in.Settings}
}

// mapWindowsPaths makes the Windows paths of windows-*.json point into the
// fake install: C:\Strata\ is the install, D:\Strata-data\models\ its models.
func mapWindowsPaths(t *testing.T, root string) {
	old := statFile
	statFile = func(p string) error {
		for _, m := range [][2]string{{`C:\Strata\`, root + "/"}, {`D:\Strata-data\models\`, root + "/models/"}} {
			if strings.HasPrefix(p, m[0]) {
				p = m[1] + strings.ReplaceAll(p[len(m[0]):], `\`, "/")
			}
		}
		_, err := os.Stat(p)
		return err
	}
	t.Cleanup(func() { statFile = old })
}

func req(base VisionRequest, pl settings.Placement) VisionRequest {
	base.Placement = pl
	return base
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimPrefix(b, bom), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

// unowned is the config without what the companion owns: the vision block,
// --vision and --vram-reserve-mib N in args, and our env entry. It is
// computed with encoding/json, independently of the editor.
func unowned(t *testing.T, b []byte) map[string]any {
	m := decode(t, b)
	stripOwned(m)
	return m
}

// stripOwned removes from a decoded config what the companion owns: the
// vision block, --vision and --vram-reserve-mib N in args, and our env entry.
func stripOwned(m map[string]any) {
	delete(m, "vision")
	// Vision on turns lazy loading off (TestVisionTurnsLazyLoadingOff).
	if m["lazy_load"] == true {
		m["lazy_load"] = false
	}
	if args, ok := m["args"].([]any); ok {
		var kept []any
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "--vision", "--lazy":
				continue
			case "--vram-reserve-mib":
				i++
				continue
			}
			kept = append(kept, args[i])
		}
		m["args"] = kept
		if len(kept) == 0 {
			delete(m, "args")
		}
	}
	if env, ok := m["env"].(map[string]any); ok {
		delete(env, EnvSettings)
		if len(env) == 0 {
			delete(m, "env")
		}
	}
}

// unchangedLines checks that every line the diff touches is about a key the
// companion owns: a byte-level check that nothing else moved.
func unchangedLines(t *testing.T, c *Change) {
	t.Helper()
	owned := []string{`"vision"`, `"exe"`, `"mmproj"`, `"model"`, `"gpu"`, `"max_tokens"`, `"threads"`, `"cuda_device"`, `"remote"`,
		`"--vision"`, `"--vram-reserve-mib"`, `"700"`, `"1000"`, `"env"`, EnvSettings, `}`, `{`, `"hot"`, `"lazy_load"`, `"--lazy"`}
	for _, line := range strings.Split(c.Diff(), "\n") {
		if !(strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) || strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---") {
			continue
		}
		ok := false
		for _, o := range owned {
			if strings.Contains(line, o) {
				ok = true
			}
		}
		// A line whose only change is a comma added or dropped at its end.
		if !ok && (strings.HasSuffix(strings.TrimSpace(line), ",") || strings.Contains(c.Diff(), strings.TrimSpace(line[1:])+",")) {
			ok = true
		}
		if !ok {
			t.Errorf("the diff touches a line the companion does not own: %q\n%s", line, c.Diff())
		}
	}
}

func TestReapplyingTheCurrentPlacementChangesNothing(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.file, func(t *testing.T) {
			in, base := fixture(t, s.file, s.windows)
			c, err := Read(in.Config)
			if err != nil {
				t.Fatal(err)
			}
			if c.Placement() != s.placing {
				t.Fatalf("placement = %s, want %s", c.Placement(), s.placing)
			}
			if s.file == "remote-fork-tabs.json" {
				base.SettingsPath = c.Env[EnvSettings]
			}
			ch, err := PlanVision(in.Config, req(base, s.placing))
			if err != nil {
				t.Fatal(err)
			}
			if ch.Changed() || ch.Diff() != "" {
				t.Fatalf("a no-change plan changed the file:\n%s", ch.Diff())
			}
			b, err := ch.Apply()
			if err != nil || b != "" {
				t.Fatalf("Apply of no change = %q, %v; want no backup", b, err)
			}
		})
	}
}

func TestEachPlacementChangesOnlyWhatItOwns(t *testing.T) {
	two := 2
	for _, s := range shapes {
		for _, pl := range []settings.Placement{settings.PlacementGPU, settings.PlacementCPU, settings.PlacementRemote, settings.PlacementOff} {
			t.Run(s.file+"/"+string(pl), func(t *testing.T) {
				in, base := fixture(t, s.file, s.windows)
				r := req(base, pl)
				if pl == settings.PlacementGPU {
					r.Device = &two
				}
				if pl == settings.PlacementCPU {
					r.Threads = 5
				}
				ch, err := PlanVision(in.Config, r)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(unowned(t, ch.Old), unowned(t, ch.New)) {
					t.Fatalf("keys the companion does not own changed:\n%s", ch.Diff())
				}
				unchangedLines(t, ch)
				// The file's line endings stay as they were.
				if crlf := bytes.Contains(ch.Old, []byte("\r\n")); crlf != (bytes.Count(ch.New, []byte("\n")) == bytes.Count(ch.New, []byte("\r\n"))) {
					t.Fatalf("line endings changed:\n%q", ch.New)
				}
				got := decode(t, ch.New)
				args, _ := got["args"].([]any)
				v, _ := got["vision"].(map[string]any)
				if pl == settings.PlacementOff {
					if _, has := got["vision"]; has || contains(args, "--vision") {
						t.Fatalf("off left vision on:\n%s", ch.New)
					}
					return
				}
				if !contains(args, "--vision") || !contains(args, "--vram-reserve-mib") {
					t.Fatalf("args = %v, want --vision and --vram-reserve-mib", args)
				}
				if old := decode(t, ch.Old); contains(old["args"].([]any), "--vram-reserve-mib") {
					oa := old["args"].([]any)
					if args[idxAny(args, "--vram-reserve-mib")+1] != oa[idxAny(oa, "--vram-reserve-mib")+1] {
						t.Fatalf("the existing reserve value was not kept: %v -> %v", oa, args)
					}
				}
				for _, k := range []string{"mmproj", "model"} {
					if s, _ := v[k].(string); s == "" {
						t.Fatalf("vision.%s missing: %v", k, v)
					}
				}
				switch pl {
				case settings.PlacementGPU:
					if v["gpu"] != true || v["cuda_device"] != 2.0 || v["threads"] != nil || v["remote"] != nil || isRelay(v["exe"].(string)) {
						t.Fatalf("gpu block = %v", v)
					}
					if strings.Contains(v["mmproj"].(string), "Q8_0") && !s.windows {
						t.Fatalf("a GPU should use the BF16 projector when there is one: %v", v["mmproj"])
					}
				case settings.PlacementCPU:
					if v["gpu"] != false || v["threads"] != 5.0 || v["cuda_device"] != nil || v["remote"] != nil || isRelay(v["exe"].(string)) {
						t.Fatalf("cpu block = %v", v)
					}
					if !strings.Contains(v["mmproj"].(string), "Q8_0") {
						t.Fatalf("the CPU should get the Q8_0 projector: %v", v["mmproj"])
					}
				case settings.PlacementRemote:
					env, _ := got["env"].(map[string]any)
					if v["gpu"] != false || v["remote"] != true || v["exe"] != in.Relay || env[EnvSettings] != in.Settings {
						t.Fatalf("remote block = %v, env = %v", v, env)
					}
				}
				if mt, _ := v["max_tokens"].(float64); mt == 0 {
					t.Fatalf("max_tokens not set: %v", v)
				}
				// The result is what PlanVision promised: valid, with files
				// that exist.
				if err := os.WriteFile(in.Config, ch.New, 0o644); err != nil {
					t.Fatal(err)
				}
				c, err := Read(in.Config)
				if err != nil || c.Err() != nil || c.Placement() != pl {
					t.Fatalf("result: %v / %v / %s", err, c.Err(), c.Placement())
				}
			})
		}
	}
}

func contains(list []any, s string) bool { return idxAny(list, s) >= 0 }

func idxAny(list []any, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func apply(t *testing.T, path string, r VisionRequest) *Change {
	t.Helper()
	ch, err := PlanVision(path, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Apply(); err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestOffThenGPUGivesTheSameConfigBack(t *testing.T) {
	for _, file := range []string{"gpu-2space.json", "remote-fork-tabs.json", "windows-cpu-crlf.json", "relative-cpu.json"} {
		t.Run(file, func(t *testing.T) {
			in, base := fixture(t, file, strings.HasPrefix(file, "windows"))
			orig, _ := os.ReadFile(in.Config)
			before, _ := Read(in.Config)
			apply(t, in.Config, req(base, settings.PlacementOff))
			if c, _ := Read(in.Config); c.Vision != nil || c.Placement() != settings.PlacementOff {
				t.Fatalf("off: %+v", c.Vision)
			}
			back := before.Placement()
			if back == settings.PlacementRemote {
				base.SettingsPath = before.Env[EnvSettings]
			}
			ch := apply(t, in.Config, req(base, back))
			got, _ := os.ReadFile(in.Config)
			if !reflect.DeepEqual(decode(t, orig), decode(t, got)) {
				t.Fatalf("off then %s is not equivalent:\n%s", back, unifiedDiff("original", "after", string(orig), string(got)))
			}
			// In these shapes the text itself comes back, byte for byte.
			if !bytes.Equal(orig, got) {
				t.Fatalf("off then %s changed the text:\n%s", back, unifiedDiff("original", "after", string(orig), string(got)))
			}
			if len(ch.Notes) == 0 || !strings.Contains(ch.Notes[0], "backup") {
				t.Fatalf("notes = %q, want the backup named", ch.Notes)
			}
		})
	}
}

func TestGPUFromNothingFindsTheModels(t *testing.T) {
	in, base := fixture(t, "novision-4space-env.json", false)
	r := req(base, settings.PlacementGPU)
	r.VRAMTotalMiB = 12288
	ch := apply(t, in.Config, r)
	c, err := Read(in.Config)
	if err != nil || c.Err() != nil {
		t.Fatal(err, c.Err())
	}
	v := c.Vision
	if filepath.Base(v.MMProj) != fakestrata.MMProjBF16 || filepath.Base(v.Model) != fakestrata.ModelShard ||
		v.Exe != filepath.Join(in.Root, "engine", "strata-vision") || !v.GPU || v.MaxTokens != 1024 {
		t.Fatalf("vision = %+v", v)
	}
	// --vram-reserve-mib 1200 was there: kept; --vision goes beside it.
	want := []string{"--model", filepath.Join(in.Root, "models", fakestrata.ModelShard), "--ctx", "32768", "--vision", "--vram-reserve-mib", "1200"}
	if !reflect.DeepEqual(c.Args, want) {
		t.Fatalf("args = %q", c.Args)
	}
	// The new block is written in the file's style: 4-space indent.
	if !strings.Contains(string(ch.New), "    \"vision\": {\n        \"exe\": ") || !strings.HasSuffix(string(ch.New), "\n    }\n}\n") {
		t.Fatalf("new block not in the file's style:\n%s", ch.New)
	}
}

func TestVRAMReserveFollowsTheCard(t *testing.T) {
	for _, tc := range []struct {
		mib  int
		want string
	}{{0, "700"}, {8192, "1000"}, {12288, "1000"}, {16303, "700"}} {
		in, base := fixture(t, "compact-novision.json", false)
		r := req(base, settings.PlacementCPU)
		r.VRAMTotalMiB = tc.mib
		ch, err := PlanVision(in.Config, r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(ch.New, []byte(`"--ctx","16384","--vision","--vram-reserve-mib","`+tc.want+`"]`)) {
			t.Fatalf("VRAM %d MiB: args not compact with reserve %s:\n%s", tc.mib, tc.want, ch.New)
		}
		if !bytes.Contains(ch.New, []byte(`"vision":{"exe":`)) {
			t.Fatalf("a compact file should get a compact block:\n%s", ch.New)
		}
		c, _ := fromBytes(in.Config, ch.New)
		if c.Vision.Threads != max(1, runtime.NumCPU()/2) || c.Vision.MaxTokens != 300 {
			t.Fatalf("cpu defaults: %+v", c.Vision)
		}
	}
}

func TestNoProjectorAnywhereIsRefusedWithWhatToDo(t *testing.T) {
	text, _ := os.ReadFile("testdata/compact-novision.json")
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: string(text), NoMMProj: true})
	_, err := PlanVision(in.Config, VisionRequest{Placement: settings.PlacementGPU})
	if err == nil || !strings.Contains(err.Error(), "no vision projector") || !strings.Contains(err.Error(), "--vision gpu") {
		t.Fatalf("err = %v", err)
	}
}

func TestMaxTokensTheUserChoseIsKept(t *testing.T) {
	in, base := fixture(t, "relative-cpu.json", false) // max_tokens 448: a choice
	apply(t, in.Config, req(base, settings.PlacementGPU))
	c, _ := Read(in.Config)
	if c.Vision.MaxTokens != 448 || c.Vision.Threads != 0 || filepath.Base(c.Vision.MMProj) != fakestrata.MMProjBF16 {
		t.Fatalf("vision = %+v", c.Vision)
	}
	if c.Vision.MMProj != "models/"+fakestrata.MMProjBF16 {
		t.Fatalf("the config's relative spelling was not kept: %q", c.Vision.MMProj)
	}
	in, base = fixture(t, "gpu-2space.json", false) // 1024: the GPU default
	apply(t, in.Config, req(base, settings.PlacementCPU))
	c, _ = Read(in.Config)
	if c.Vision.MaxTokens != 300 {
		t.Fatalf("max_tokens = %d, want the CPU default", c.Vision.MaxTokens)
	}
}

func TestLeavingRemoteRestoresTheEncoderAndKeepsOtherEnv(t *testing.T) {
	in, base := fixture(t, "remote-fork-tabs.json", false)
	apply(t, in.Config, req(base, settings.PlacementCPU))
	c, _ := Read(in.Config)
	if c.Vision.Exe != filepath.Join(in.Root, "engine", "strata-vision") || c.Vision.Remote || !c.Vision.Hot {
		t.Fatalf("vision = %+v", c.Vision)
	}
	if _, has := c.Env[EnvSettings]; has || c.Env["OMP_NUM_THREADS"] != "4" {
		t.Fatalf("env = %v", c.Env)
	}
	// And back: the relay and our env entry return, the other entry stays.
	apply(t, in.Config, req(base, settings.PlacementRemote))
	c, _ = Read(in.Config)
	if c.Placement() != settings.PlacementRemote || c.Env[EnvSettings] != in.Settings || c.Env["OMP_NUM_THREADS"] != "4" {
		t.Fatalf("placement %s env %v", c.Placement(), c.Env)
	}
}

func TestRemoteWithoutEnvCreatesItAndGPUTakesItAway(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	orig, _ := os.ReadFile(in.Config)
	ch := apply(t, in.Config, req(base, settings.PlacementRemote))
	if !strings.Contains(string(ch.New), "  \"env\": {\n    \""+EnvSettings+"\": ") {
		t.Fatalf("env not in the file's style:\n%s", ch.New)
	}
	apply(t, in.Config, req(base, settings.PlacementGPU))
	got, _ := os.ReadFile(in.Config)
	if !bytes.Equal(orig, got) {
		t.Fatalf("gpu -> remote -> gpu changed the text:\n%s", unifiedDiff("a", "b", string(orig), string(got)))
	}
}

func TestRemoteNeedsTheRelay(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	base.RelayExe = filepath.Join(in.Root, "nowhere", "strata-vision-relay")
	_, err := PlanVision(in.Config, req(base, settings.PlacementRemote))
	if err == nil || !strings.Contains(err.Error(), "relay") || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadConfigsAreRefusedAndLeftUntouched(t *testing.T) {
	good, _ := os.ReadFile("testdata/gpu-2space.json")
	cases := []struct {
		name, text, want string
		offFixes         bool
	}{
		{"truncated", string(good[:len(good)/2]), "ends too early", false},
		{"not json", "exe = strata\n", "not valid JSON", false},
		{"empty", "", "empty", false},
		{"a list", "[1, 2]", "not an object", false},
		{"vision a string", `{"vision": "gpu", "args": []}`, "vision: must be an object", false},
		{"vision without mmproj", `{"vision": {"model": "@MODELS@/` + fakestrata.ModelShard + `"}}`, "vision.mmproj: is missing", false},
		{"max_tokens a word", strings.Replace(string(good), `"max_tokens": 1024`, `"max_tokens": "lots"`, 1), `vision.max_tokens: must be a whole number`, false},
		{"gpu a word", strings.Replace(string(good), `"gpu": true`, `"gpu": "yes"`, 1), `vision.gpu: must be true or false`, false},
		{"args not strings", `{"args": ["--ctx", 4096]}`, "args[1]: must be a string", false},
		{"missing mmproj file", strings.Replace(string(good), "mmproj-Qwen3.5-122B-A10B-BF16.gguf", "mmproj-gone.gguf", 1), "mmproj-gone.gguf does not exist", true},
		{"missing engine", strings.Replace(string(good), `engine/strata"`, `engine/strata-old"`, 1), "the engine", false},
		{"two vision blocks", `{"vision": null, "vision": null}`, "appears 2 times", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: tc.text})
			text := strings.ReplaceAll(tc.text, "@MODELS@", fakestrata.JSONPath(filepath.Join(in.Root, "models")))
			fakestrata.Write(t, in.Config, strings.ReplaceAll(text, "@ROOT@", fakestrata.JSONPath(in.Root)), 0o644)
			before, _ := os.ReadFile(in.Config)
			st0, _ := os.Stat(in.Config)
			for _, pl := range []settings.Placement{settings.PlacementGPU, settings.PlacementOff} {
				if pl == settings.PlacementOff && tc.offFixes {
					// Turning vision off is how a user gets rid of a
					// block whose files are gone: the result is valid.
					continue
				}
				_, err := PlanVision(in.Config, VisionRequest{Placement: pl, RelayExe: in.Relay, SettingsPath: in.Settings})
				if err == nil {
					t.Fatalf("%s: want a refusal", pl)
				}
				if !strings.Contains(err.Error(), in.Config) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: err = %v\nwant the file and %q", pl, err, tc.want)
				}
			}
			after, _ := os.ReadFile(in.Config)
			st1, _ := os.Stat(in.Config)
			if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
				t.Fatal("the file was touched")
			}
			if len(listBackups(in.Config)) != 0 {
				t.Fatal("a backup was made for a refused change")
			}
		})
	}
}

func TestReadView(t *testing.T) {
	in, _ := fixture(t, "windows-cpu-crlf.json", true)
	c, err := Read(in.Config)
	if err != nil {
		t.Fatal(err)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	if c.Port() != 8080 || c.Host() != "0.0.0.0" || c.APIKey() != "sk-local-123" || c.LogPath() != `C:\Strata\strata-coder-iq1_m.log` ||
		c.VRAMReserveMiB() != 1000 || c.Vision.Threads != 8 || c.Vision.MMProj != `D:\Strata-data\models\mmproj-Qwen3.5-122B-A10B-Q8_0.gguf` {
		t.Fatalf("read %+v %+v", c, c.Vision)
	}
	in, _ = fixture(t, "novision-4space-env.json", false)
	c, _ = Read(in.Config)
	if c.Port() != 8095 || c.Host() != "127.0.0.1" || c.LogPath() != filepath.Join(in.Root, "strata-iq2_xs.log") || c.Vision != nil || c.Env["GGML_CUDA_NO_PINNED"] != "1" {
		t.Fatalf("read %+v", c)
	}
}

func TestDiffIsUnified(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	ch, err := PlanVision(in.Config, req(base, settings.PlacementCPU))
	if err != nil {
		t.Fatal(err)
	}
	d := ch.Diff()
	for _, want := range []string{
		// Issue 40: an edit in place, not a new file: no "(new)".
		"--- " + in.Config + "\n+++ " + in.Config + "\n@@ -",
		"-    \"mmproj\": \"" + fakestrata.JSONPath(filepath.Join(in.Root, "models", fakestrata.MMProjBF16)) + "\",\n",
		"+    \"mmproj\": \"" + fakestrata.JSONPath(filepath.Join(in.Root, "models", fakestrata.MMProjQ8)) + "\",\n",
		"-    \"gpu\": true,\n", "+    \"gpu\": false,\n", "-    \"max_tokens\": 1024\n", "+    \"max_tokens\": 300,\n",
		"+    \"threads\": " + strconv.Itoa(max(1, runtime.NumCPU()/2)) + "\n", "   },\n   \"lazy_load\": false,\n",
	} {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d)
		}
	}
}

func TestASymlinkedConfigStaysALink(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	link := filepath.Join(in.Root, "strata-current.json")
	if err := os.Symlink(in.Config, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	ch := apply(t, link, req(base, settings.PlacementOff))
	if ch.Path != in.Config {
		t.Fatalf("edited %s, want the link's target", ch.Path)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
}

func TestReserveWrittenWithEqualsIsKept(t *testing.T) {
	in := fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: `{"exe": "engine/strata", "args": ["--vram-reserve-mib=900"]}`})
	ch, err := PlanVision(in.Config, VisionRequest{Placement: settings.PlacementGPU})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := fromBytes(in.Config, ch.New)
	if !reflect.DeepEqual(c.Args, []string{"--vram-reserve-mib=900", "--vision"}) || c.VRAMReserveMiB() != 900 {
		t.Fatalf("args = %q", c.Args)
	}
}

// Strata refuses to start with lazy loading and a vision block: every
// placement that writes the block turns it off, says so in a note, and
// leaves it alone otherwise.
func TestVisionTurnsLazyLoadingOff(t *testing.T) {
	for _, pl := range []settings.Placement{settings.PlacementGPU, settings.PlacementCPU, settings.PlacementRemote} {
		for _, shape := range []string{"key", "arg", "both", "keyfalse"} {
			t.Run(string(pl)+"/"+shape, func(t *testing.T) {
				in, base := fixture(t, "gpu-2space.json", false)
				text, _ := os.ReadFile(in.Config)
				m := decode(t, text)
				switch shape {
				case "key":
					text = bytes.Replace(text, []byte(`"lazy_load": false`), []byte(`"lazy_load": true`), 1)
				case "arg", "both":
					if shape == "both" {
						text = bytes.Replace(text, []byte(`"lazy_load": false`), []byte(`"lazy_load": 1`), 1)
					}
					text = bytes.Replace(text, []byte(`"args": [`), []byte(`"args": ["--lazy", `), 1)
				}
				if shape != "keyfalse" && bytes.Equal(text, mustRead(t, in.Config)) {
					t.Fatalf("fixture changed shape: no lazy_load/args in\n%s", text)
				}
				if err := os.WriteFile(in.Config, text, 0o644); err != nil {
					t.Fatal(err)
				}
				if c, _ := Read(in.Config); c.Lazy != (shape != "keyfalse") {
					t.Fatalf("Read: Lazy = %v for %s", c.Lazy, shape)
				}
				ch := apply(t, in.Config, req(base, pl))
				got := decode(t, mustRead(t, in.Config))
				if got["lazy_load"] != false {
					t.Errorf("lazy_load = %v, want false", got["lazy_load"])
				}
				args, _ := got["args"].([]any)
				if contains(args, "--lazy") {
					t.Errorf("args still has --lazy: %v", args)
				}
				c, _ := Read(in.Config)
				if c.Lazy || c.Vision == nil {
					t.Errorf("after %s: Lazy=%v vision=%v", pl, c.Lazy, c.Vision)
				}
				noted := strings.Contains(strings.Join(ch.Notes, "\n"), "lazy")
				if noted != (shape != "keyfalse") {
					t.Errorf("notes = %q (shape %s)", ch.Notes, shape)
				}
				// Everything else stays: the other keys are the fixture's.
				delete(m, "lazy_load")
				delete(got, "lazy_load")
				stripOwned(m)
				stripOwned(got)
				if !reflect.DeepEqual(m, got) {
					t.Errorf("more than lazy loading changed:\n%v\n%v", m, got)
				}
			})
		}
	}
	// Off leaves lazy loading as it is (it is text-only, which off is).
	in, base := fixture(t, "novision-4space-env.json", false)
	before := mustRead(t, in.Config)
	apply(t, in.Config, req(base, settings.PlacementOff))
	if c, _ := Read(in.Config); !c.Lazy || !bytes.Equal(before, mustRead(t, in.Config)) {
		t.Fatalf("off changed a text-only lazy config")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A config made read-only (0444) is refused with its path and the fix, and
// is never replaced: plan, apply of an older plan, and restore.
func TestReadOnlyConfigIsRefusedAndKept(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	if _, err := PlanVision(in.Config, req(base, settings.PlacementCPU)); err != nil {
		t.Fatal(err)
	}
	apply(t, in.Config, req(base, settings.PlacementOff)) // a backup to restore
	ch, err := PlanVision(in.Config, req(base, settings.PlacementCPU))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(in.Config, 0o444); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, in.Config)
	st0, _ := os.Stat(in.Config)
	backups := len(Backups(in.Config))
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: a read-only config was accepted", what)
		}
		for _, w := range []string{in.Config, "read-only", "chmod u+w"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
	}
	_, err = PlanVision(in.Config, req(base, settings.PlacementGPU))
	check("plan", err)
	_, err = ch.Apply()
	check("apply", err)
	_, err = Restore(in.Config)
	check("restore", err)
	st, _ := os.Stat(in.Config)
	if !bytes.Equal(before, mustRead(t, in.Config)) || !os.SameFile(st0, st) || st.Mode().Perm() != 0o444 {
		t.Fatalf("the read-only config was replaced (mode %v)", st.Mode())
	}
	if n := len(Backups(in.Config)); n != backups {
		t.Fatalf("backups %d -> %d: a refused change wrote one", backups, n)
	}
}

// Issue 40: the diff that puts the relay in (the CPU and the second PC go
// through it) says at the diff why it sets "remote": true; a plan that
// keeps the relay says nothing of it again.
func TestTheRelayDiffSaysWhyRemote(t *testing.T) {
	in, base := fixture(t, "gpu-2space.json", false)
	why := func(ch *Change) bool {
		for _, n := range ch.Notes {
			if strings.Contains(n, `"remote": true`) && strings.Contains(n, "this PC's CPU") && strings.Contains(n, "needs no restart") {
				return true
			}
		}
		return false
	}
	ch := apply(t, in.Config, req(base, settings.PlacementRemote))
	if !strings.Contains(ch.Diff(), `+    "remote": true`) || !why(ch) {
		t.Fatalf("notes %q for the diff:\n%s", ch.Notes, ch.Diff())
	}
	again, err := PlanVision(in.Config, req(base, settings.PlacementRemote))
	if err != nil {
		t.Fatal(err)
	}
	if why(again) {
		t.Errorf("a plan that keeps the relay explains it again: %q", again.Notes)
	}
}
