// Package stratatmp finds the temporary folders Strata's server makes and
// leaves behind: every run's image encoder gets one (serve/server.py's
// Vision: tempfile.mkdtemp(prefix="strata-vision-")), holding the cached
// results of its pictures (up to 64 .sve files of ~10 MB), and none is ever
// removed. A service that restarts Strata every few days piles them up.
//
// Only a folder that looks exactly like Strata's is touched: its name is the
// prefix and mkdtemp's eight letters, digits or underscores, it is a plain
// folder (no link) of the account that ran the server, and it holds
// nothing but .sve and .img files.
package stratatmp

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prefix starts the name of each folder.
const Prefix = "strata-vision-"

// Dir is the temporary folder a process with environment env uses, as
// Python's tempfile picks it: TMPDIR, TEMP, TMP, else the system's.
func Dir(env []string) string {
	vals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[strings.ToUpper(k)] = v // later entries win, as exec does
		}
	}
	for _, k := range []string{"TMPDIR", "TEMP", "TMP"} {
		if v := vals[k]; v != "" {
			return v
		}
	}
	return os.TempDir()
}

// List returns the Strata folders in dir, by name, with their modification
// times (a folder's changes when a file is added or removed in it).
func List(dir string) map[string]time.Time {
	out := map[string]time.Time{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() || !looksLikeStrata(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsDir() {
			out[e.Name()] = fi.ModTime()
		}
	}
	return out
}

func looksLikeStrata(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok || len(rest) != 8 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Run is one run of the server: the folders there before it started.
type Run struct {
	Dir     string
	Before  map[string]time.Time
	Started time.Time
	// UID is the account that runs the server (Unix): only its folders
	// are removed. Start sets this process's; the supervisor sets the
	// account it runs Strata as.
	UID int
}

// Start records the folders in dir before a server starts.
func Start(dir string) *Run {
	return &Run{Dir: dir, Before: List(dir), Started: time.Now(), UID: os.Geteuid()}
}

// RemoveLeftovers removes the folders this run's server made, once it has
// exited (exited: when): those that were not there before it started, look
// like Strata's, and did not change after it exited (a folder another
// Strata uses gets files). It returns what it removed.
func (r *Run) RemoveLeftovers(exited time.Time) []string {
	var removed []string
	for name, mod := range List(r.Dir) {
		if _, old := r.Before[name]; old || mod.Before(r.Started.Add(-time.Second)) || mod.After(exited.Add(time.Second)) {
			continue
		}
		p := filepath.Join(r.Dir, name)
		// Another account's folder by the same name (a shared /tmp) is
		// not this run's, whatever its name and times say.
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() || !ownedBy(fi, r.UID) {
			continue
		}
		if onlyResults(p, exited) && os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// onlyResults: p holds nothing but regular .sve / .img files, none changed
// after exited.
func onlyResults(p string, exited time.Time) bool {
	ents, err := os.ReadDir(p)
	if err != nil {
		return false
	}
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		if !e.Type().IsRegular() || !(strings.HasSuffix(n, ".sve") || strings.HasSuffix(n, ".img")) {
			return false
		}
		if fi, err := e.Info(); err != nil || fi.ModTime().After(exited.Add(time.Second)) {
			return false
		}
	}
	return true
}
