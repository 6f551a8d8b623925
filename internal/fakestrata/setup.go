package fakestrata

// The stand-in's `setup.py`: what Strata's setup does with --update and
// --rollback-engine, as its setup.py does it (read from Strata's sources):
//
//   - --update asks nothing and never starts the server. It installs the
//     Python requirements, then replaces the engine only when
//     engine/BUILD.json's version is below setup.py's MIN_ENGINE: a running
//     engine is not replaced (opening engine/strata for writing fails while
//     it runs; Windows locks it, Linux says "text file busy"): it warns
//     "[!]  engine X is in use: close the model window and run this again
//     to update it" and still ends with "[ok] Strata is updated" and exit 0.
//     A replaced engine's files go to engine/.previous. Each strata-*.json
//     is then migrated. A "[X]" line means it stopped: exit 1.
//   - --rollback-engine swaps engine/.previous back (exit 0), or says
//     "[!]  no earlier engine is kept in ..." (exit 1).
//
// MIN_ENGINE is read from ROOT/setup.py (a line `MIN_ENGINE = (0, 1, 44)`),
// so a `git pull` that brings a newer setup.py raises it, as in Strata. The
// "download" of the new engine copies the engine in place (the stand-in is
// its own engine) with a BUILD.json of the new version. ROOT/standin-setup-mode
// makes it fail as Strata's can: "pip-fails" ([X] at the requirements),
// "download-fails" ([!] updating the engine failed; the old one is kept),
// "download-refused" ([!]  keeping the engine that is installed: ..., as
// newer setups say when a download's SHA-256 does not match),
// "migrate-fails" ([X] while migrating a config, after the engine was replaced).

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// SetupModeFile is the file in the install that makes the stand-in setup fail.
const SetupModeFile = "standin-setup-mode"

var minEngineRe = regexp.MustCompile(`MIN_ENGINE\s*=\s*\((\d+),\s*(\d+),\s*(\d+)\)`)

func setupMain(script string, args []string, out io.Writer) int {
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	root, _ := os.Getwd()
	if abs, err := filepath.Abs(script); err == nil {
		root = filepath.Dir(abs)
	}
	mode := ""
	if b, err := os.ReadFile(filepath.Join(root, SetupModeFile)); err == nil {
		mode = strings.TrimSpace(string(b))
	}
	eng := filepath.Join(root, "engine")
	has := func(f string) bool { return len(args) > 0 && contains(args, f) }
	switch {
	case has("--rollback-engine"):
		prev := filepath.Join(eng, ".previous")
		if _, err := os.Stat(filepath.Join(prev, "BUILD.json")); err != nil {
			say("[!]  no earlier engine is kept in %s", prev)
			return 1
		}
		cur := readVersion(eng)
		old := readVersion(prev)
		tmp := filepath.Join(eng, ".rollback")
		os.RemoveAll(tmp)
		os.MkdirAll(tmp, 0o755)
		for _, f := range engineFiles(eng) {
			os.Rename(filepath.Join(eng, f), filepath.Join(tmp, f))
		}
		for _, f := range engineFiles(prev) {
			os.Rename(filepath.Join(prev, f), filepath.Join(eng, f))
		}
		os.RemoveAll(prev)
		os.Rename(tmp, prev)
		say("[ok] put back engine %s (engine %s is kept in %s)", old, cur, prev)
		return 0
	case has("--setup"):
		return setupAgain(root, args, say)
	case has("--update"):
	default:
		say("stand-in setup.py: only --update and --rollback-engine are played here")
		return 2
	}
	say("=== Step 1: Python packages ===")
	if mode == "pip-fails" {
		say("[X] pip could not install the requirements (stand-in pip-fails)")
		return 1
	}
	say("[ok] the Python packages are up to date")
	say("=== Step 2: the engine ===")
	cur := readVersion(eng)
	min := ""
	if b, err := os.ReadFile(filepath.Join(root, "setup.py")); err == nil {
		if m := minEngineRe.FindStringSubmatch(string(b)); m != nil {
			min = m[1] + "." + m[2] + "." + m[3]
		}
	}
	switch {
	case min == "" || !older(cur, min):
		say("[ok] engine %s is up to date", cur)
	case inUse(eng):
		say("[!]  engine %s is in use: close the model window and run this again to update it", cur)
	case mode == "download-refused":
		say("[!]  keeping the engine that is installed: the download of strata-%s does not match the SHA-256 GitHub's releases list", min)
	case mode == "download-fails":
		say("[!]  updating the engine failed (the download of strata-%s did not complete); keeping engine %s", min, cur)
	default:
		prev := filepath.Join(eng, ".previous")
		os.RemoveAll(prev)
		os.MkdirAll(prev, 0o755)
		self, _ := os.ReadFile(filepath.Join(eng, "strata"))
		for _, f := range engineFiles(eng) {
			os.Rename(filepath.Join(eng, f), filepath.Join(prev, f))
		}
		os.WriteFile(filepath.Join(eng, "strata"), self, 0o755)
		if b, err := os.ReadFile(filepath.Join(prev, "strata-vision")); err == nil {
			os.WriteFile(filepath.Join(eng, "strata-vision"), b, 0o755)
		}
		meta, _ := json.Marshal(map[string]any{"version": min, "source": "prebuilt"})
		os.WriteFile(filepath.Join(eng, "BUILD.json"), append(meta, '\n'), 0o644)
		say("[ok] engine %s installed", min)
		say("[ok] the engine it replaced (%s) is kept in %s; setup.py --rollback-engine puts it back", cur, prev)
		cur = min
	}
	say("=== Step 3: the model configs ===")
	cfgs, _ := filepath.Glob(filepath.Join(root, "strata-*.json"))
	sort.Strings(cfgs)
	for _, c := range cfgs {
		tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(c), "strata-"), ".json")
		if mode == "migrate-fails" {
			say("[X] %s: the config could not be migrated (stand-in migrate-fails)", tag)
			return 1
		}
		say("[ok] %s: up to date", tag)
	}
	say("[ok] Strata is updated (engine %s). Start the model with START-HERE.bat when you want it.", cur)
	return 0
}

// setupAgain is `setup.py --setup --yes --no-start`: each strata-*.json is
// built again as Strata's setup builds it, carrying over what setup does
// not own. Setup owns vision.exe (a relay there becomes
// engine/strata-vision), drops host and api_key, and puts port back to
// 8080 (unless --port N); the old file is kept as strata-<tag>.json.bak and
// the new one replaces it by a rename. Without --no-start it would start
// the server in this console: not played here (exit 2).
func setupAgain(root string, args []string, say func(string, ...any)) int {
	port := 8080
	for i, a := range args {
		if a == "--port" && i+1 < len(args) {
			port, _ = strconv.Atoi(args[i+1])
		}
	}
	cfgs, _ := filepath.Glob(filepath.Join(root, "strata-*.json"))
	sort.Strings(cfgs)
	say("=== Step 5: the model config ===")
	for _, c := range cfgs {
		b, err := os.ReadFile(c)
		if err != nil {
			say("[X] %s: %v", c, err)
			return 1
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			say("[X] %s is not valid JSON: %v", c, err)
			return 1
		}
		if v, ok := m["vision"].(map[string]any); ok {
			v["exe"] = filepath.Join("engine", "strata-vision")
		}
		delete(m, "host")
		delete(m, "api_key")
		m["port"] = port
		out, _ := json.MarshalIndent(m, "", "  ")
		os.WriteFile(c+".bak", b, 0o644)
		tmp := c + ".tmp"
		if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
			say("[X] writing %s: %v", c, err)
			return 1
		}
		if err := os.Rename(tmp, c); err != nil {
			say("[X] writing %s: %v", c, err)
			return 1
		}
		say("[ok] wrote %s (the old one is %s.bak)", filepath.Base(c), filepath.Base(c))
	}
	if !contains(args, "--no-start") {
		say("stand-in setup.py: starting the server in this console is not played here; pass --no-start")
		return 2
	}
	say("[ok] Strata is set up. Start the model with START-HERE.bat when you want it.")
	return 0
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// engineFiles are the engine folder's files (not its dot folders).
func engineFiles(dir string) []string {
	var out []string
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func readVersion(dir string) string {
	var meta struct {
		Version string `json:"version"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "BUILD.json"))
	json.Unmarshal(b, &meta)
	if meta.Version == "" {
		return "0"
	}
	return meta.Version
}

// older compares dotted versions numerically, as Strata's setup.py compares
// its version tuples. The daemon has its own copy (service/daemon): the
// stand-in does not share the product's code, so it cannot agree with a
// wrong comparison there by construction.
func older(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// inUse is Strata's check: a running engine cannot be opened for writing.
func inUse(eng string) bool {
	for _, f := range []string{"strata", "strata-vision"} {
		p := filepath.Join(eng, f)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		fh, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return true
		}
		fh.Close()
	}
	return false
}

// isStandin says whether exe is a copy of this program (an install whose
// engine/strata is the stand-in).
func isStandin(exe string) bool {
	self, err := os.Executable()
	if err != nil || exe == "" {
		return false
	}
	a, err1 := os.Stat(self)
	b, err2 := os.Stat(exe)
	if err1 != nil || err2 != nil || a.Size() != b.Size() || b.Size() < 1<<16 {
		return false
	}
	x, _ := os.ReadFile(self)
	y, _ := os.ReadFile(exe)
	return string(x) == string(y)
}

// SetupPy is the text of a stand-in install's setup.py with MIN_ENGINE at
// version (a Python shim, like serve/server.py, that runs the stand-in).
func SetupPy(bin, version string) string {
	v := strings.ReplaceAll(version, ".", ", ")
	return fmt.Sprintf("# Strata stand-in setup: runs %s with this script's arguments.\nMIN_ENGINE = (%s)\nimport os, sys\nos.execv(%q, [%q] + sys.argv)\n", bin, v, bin, bin)
}

// Updatable gives r an engine Strata's setup can update: engine/strata is
// a copy of the stand-in (the server runs its engine from there),
// engine/BUILD.json says version, and setup.py's MIN_ENGINE is version.
func (r *Root) Updatable(version string) error {
	bin := filepath.Join(r.Dir, ".venv", "bin", exeName)
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := writeExecutable(filepath.Join(r.Dir, "engine", "strata"), b); err != nil {
		return err
	}
	meta, _ := json.Marshal(map[string]any{"version": version, "source": "prebuilt"})
	if err := os.WriteFile(filepath.Join(r.Dir, "engine", "BUILD.json"), append(meta, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.Dir, "setup.py"), []byte(SetupPy(bin, version)), 0o644)
}
