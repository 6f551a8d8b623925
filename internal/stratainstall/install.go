// Package stratainstall finds Strata installs on this PC (a folder holding
// serve/server.py and engine/), their configs, the venv's Python, the run
// scripts, and which config is the one in use.
//
// Where it looks, in order: what the caller names (--config, --strata-root),
// what the companion's settings name, then the usual places: beside the
// companion's own folder, the user's home, and on Windows the drive roots.
package stratainstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/settings"
)

// Install is one Strata install folder.
type Install struct {
	Root     string   `json:"root"`      // absolute
	Python   string   `json:"python"`    // the venv's python ("" when the venv is missing)
	ServerPy string   `json:"server_py"` // ROOT/serve/server.py
	Configs  []string `json:"configs"`   // ROOT/strata-<tag>.json, sorted
	// RunScripts are ROOT/run-<tag>.bat|.sh, newest first.
	RunScripts []string `json:"run_scripts"`
	// ConfigInUse is the config to use ("" when it cannot be told: several
	// configs and no run script naming one).
	ConfigInUse string `json:"config_in_use"`
	// ConfigReason says how ConfigInUse was chosen, for `status`.
	ConfigReason string `json:"config_reason,omitempty"`
}

// Options narrow the search.
type Options struct {
	// Root is --strata-root: only this folder.
	Root string
	// Config is --config: this config file (its folder is the install).
	Config string
	// Settings are the companion's settings (StrataRoot, ConfigPath).
	Settings *settings.Settings
	// SearchDirs replaces the usual places (tests).
	SearchDirs []string
}

// IsInstall reports whether dir holds serve/server.py and an engine folder.
func IsInstall(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "serve", "server.py")); err != nil || st.IsDir() {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "engine"))
	return err == nil && st.IsDir()
}

// NotFoundError says no install was found, and where the search looked.
type NotFoundError struct {
	Looked []string
	Why    string // extra context (a stale settings entry)
}

// NotFoundText begins every NotFoundError's message: a GUI that gets the
// message as text (from the service) knows it by it and says it in its own
// words.
const NotFoundText = "no Strata install found"

func (e *NotFoundError) Error() string {
	msg := NotFoundText
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	if len(e.Looked) > 0 {
		looked := e.Looked
		if len(looked) > 8 {
			looked = append(append([]string{}, looked[:8]...), fmt.Sprintf("and %d more", len(e.Looked)-8))
		}
		msg += "; looked in " + strings.Join(looked, ", ")
	}
	msg += ". Install Strata (github.com/Niko1221/Strata), or pass --strata-root DIR (the folder holding serve/server.py and engine/)"
	// `make run`'s demo keeps its stand-in install and its own companion
	// settings in <checkout>/.demo: say how to look at it.
	for _, d := range e.Looked {
		if demo := filepath.Join(d, ".demo"); IsInstall(filepath.Join(demo, "strata")) {
			msg += fmt.Sprintf(". The demo of `make run` left a stand-in install in %s: look at it with STRATA_COMPANION_HOME=%s %s status",
				filepath.Join(demo, "strata"), filepath.Join(demo, "companion"), filepath.Join(d, "bin", "strata-service"))
			break
		}
	}
	return msg
}

// Find lists the installs it can see. Named places (opts.Root, opts.Config)
// must be installs, or Find fails saying what is wrong with them.
func Find(ctx context.Context, opts Options) ([]Install, error) {
	if opts.Config != "" {
		cfg, err := filepath.Abs(opts.Config)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(cfg); err != nil || st.IsDir() {
			return nil, fmt.Errorf("the config %s does not exist; pass the path of a strata-<tag>.json file", cfg)
		}
		root := filepath.Dir(cfg)
		if opts.Root != "" {
			r, _ := filepath.Abs(opts.Root)
			if !pathcmp.Same(r, root) {
				return nil, fmt.Errorf("the config %s is not in the Strata folder %s; Strata keeps its configs in the install folder", cfg, r)
			}
		}
		if !IsInstall(root) {
			return nil, fmt.Errorf("%s is not beside a Strata install: %s has no serve/server.py and engine/ folder", cfg, root)
		}
		in := describe(root)
		in.ConfigInUse, in.ConfigReason = cfg, "named with --config"
		return []Install{in}, nil
	}
	if opts.Root != "" {
		root, err := filepath.Abs(opts.Root)
		if err != nil {
			return nil, err
		}
		if !IsInstall(root) {
			return nil, fmt.Errorf("%s is not a Strata install: it has no serve/server.py and engine/ folder; pass the folder Strata's setup made", root)
		}
		return []Install{withSettings(describe(root), opts.Settings)}, nil
	}
	var stale string
	if s := opts.Settings; s != nil && (s.ConfigPath != "" || s.StrataRoot != "") {
		root := s.StrataRoot
		if root == "" {
			root = filepath.Dir(s.ConfigPath)
		}
		if IsInstall(root) {
			return []Install{withSettings(describe(root), s)}, nil
		}
		stale = fmt.Sprintf("the companion's settings name %s, which is no longer a Strata install", root)
	}

	dirs := opts.SearchDirs
	if dirs == nil {
		dirs = usualPlaces()
	}
	var found []Install
	seen := map[string]bool{}
	var looked []string
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		looked = append(looked, d)
		for _, cand := range candidates(d) {
			key := strings.ToLower(filepath.Clean(cand))
			if seen[key] || !IsInstall(cand) {
				continue
			}
			seen[key] = true
			abs, _ := filepath.Abs(cand)
			found = append(found, withSettings(describe(abs), opts.Settings))
		}
	}
	if len(found) == 0 {
		return nil, &NotFoundError{Looked: looked, Why: stale}
	}
	return found, nil
}

// candidates are dir itself, its Strata/strata child, and its other direct
// children (an install is often "D:\AI\Strata-main" or "~/Strata").
func candidates(dir string) []string {
	out := []string{dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// usualPlaces are the folders to search when nothing names an install.
func usualPlaces() []string {
	var dirs []string
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		// The companion installed beside Strata (ROOT/companion/) or into
		// the same parent folder.
		exeDir := filepath.Dir(self)
		dirs = append(dirs, exeDir, filepath.Dir(exeDir))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, home)
	}
	dirs = append(dirs, driveRoots()...)
	return dirs
}

// describe reads what is in an install folder.
func describe(root string) Install {
	in := Install{Root: root, ServerPy: filepath.Join(root, "serve", "server.py")}
	pys := []string{filepath.Join(root, ".venv", "bin", "python"), filepath.Join(root, ".venv", "Scripts", "python.exe")}
	if runtime.GOOS == "windows" {
		pys[0], pys[1] = pys[1], pys[0]
	}
	for _, p := range pys {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			in.Python = p
			break
		}
	}
	entries, _ := os.ReadDir(root)
	type script struct {
		path string
		mod  int64
	}
	var scripts []script
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			continue
		}
		if strings.HasPrefix(n, "strata-") && strings.HasSuffix(n, ".json") {
			in.Configs = append(in.Configs, filepath.Join(root, n))
		}
		if strings.HasPrefix(n, "run-") && (strings.HasSuffix(n, ".bat") || strings.HasSuffix(n, ".sh") || strings.HasSuffix(n, ".cmd")) {
			if info, err := e.Info(); err == nil {
				scripts = append(scripts, script{filepath.Join(root, n), info.ModTime().UnixNano()})
			}
		}
	}
	sort.Strings(in.Configs)
	sort.SliceStable(scripts, func(i, j int) bool {
		if scripts[i].mod != scripts[j].mod {
			return scripts[i].mod > scripts[j].mod
		}
		return scripts[i].path < scripts[j].path
	})
	for _, s := range scripts {
		in.RunScripts = append(in.RunScripts, s.path)
	}
	for _, s := range in.RunScripts {
		if cfg := configNamedBy(s, in.Configs); cfg != "" {
			in.ConfigInUse, in.ConfigReason = cfg, "named by the newest run script, "+filepath.Base(s)
			return in
		}
	}
	if len(in.Configs) == 1 {
		in.ConfigInUse, in.ConfigReason = in.Configs[0], "the only config"
	}
	return in
}

// withSettings prefers the config the companion's settings name, when it is
// one of this install's.
func withSettings(in Install, s *settings.Settings) Install {
	if s == nil || s.ConfigPath == "" {
		return in
	}
	for _, c := range in.Configs {
		if pathcmp.Same(c, s.ConfigPath) {
			in.ConfigInUse, in.ConfigReason = c, "named in the companion's settings"
		}
	}
	return in
}

var configRef = regexp.MustCompile(`strata-[A-Za-z0-9_.\-]+?\.json`)

// configNamedBy returns the config a run script starts the server with.
func configNamedBy(script string, configs []string) string {
	// With the install owner's rights (asowner): no link of the owner's
	// followed, no FIFO waited on, at most 1 MiB.
	b, err := readScript(script)
	if err != nil {
		return ""
	}
	for _, ref := range configRef.FindAllString(string(b), -1) {
		for _, c := range configs {
			if strings.EqualFold(filepath.Base(c), ref) {
				return c
			}
		}
	}
	return ""
}

// NeedConfigError says an install was found but which config to use could
// not be told. Install is that install.
type NeedConfigError struct{ Install *Install }

func (e *NeedConfigError) Error() string {
	if len(e.Install.Configs) == 0 {
		return fmt.Sprintf("the Strata install %s has no config (strata-<tag>.json); run Strata's setup to make one", e.Install.Root)
	}
	var names []string
	for _, c := range e.Install.Configs {
		names = append(names, filepath.Base(c))
	}
	return fmt.Sprintf("the Strata install %s has several configs (%s) and no run script names one; choose with --config %s",
		e.Install.Root, strings.Join(names, ", "), filepath.Join(e.Install.Root, names[0]))
}

// Resolve returns the install and config to use, or an error that says what
// to do: none found, several installs (choose with --strata-root), or
// several configs (choose with --config; a *NeedConfigError).
func Resolve(opts Options) (*Install, error) {
	return ResolveContext(context.Background(), opts)
}

// ResolveContext is Resolve with a context for the search.
func ResolveContext(ctx context.Context, opts Options) (*Install, error) {
	all, err := Find(ctx, opts)
	if err != nil {
		return nil, err
	}
	if len(all) > 1 {
		var roots []string
		for _, in := range all {
			roots = append(roots, in.Root)
		}
		return nil, fmt.Errorf("found %d Strata installs (%s); choose one with --strata-root DIR", len(all), strings.Join(roots, ", "))
	}
	in := all[0]
	if in.ConfigInUse == "" {
		return nil, &NeedConfigError{Install: &in}
	}
	return &in, nil
}

// IsNotFound reports whether err says no install was found.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}
