package strataconfig

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/settings"
)

// Config is a parsed, read-only view of a Strata config file. Problems lists
// what is wrong with it (wrong shapes, files that do not exist); a config
// with problems can still be shown, but is never written.
type Config struct {
	Path string // absolute
	Root string // the folder holding it (the Strata install)
	Raw  []byte

	Exe    string // the engine
	Cwd    string
	Log    string
	Args   []string
	Env    map[string]string
	Vision *Vision // nil: no vision block (images off)
	// Lazy: `lazy_load` is truthy or args has `--lazy` (text-only: Strata
	// refuses to start with a vision block then).
	Lazy    bool
	lazyKey bool // the lazy_load key (not only --lazy) says so

	port   int
	host   string
	apiKey string

	Problems []Problem
}

// Vision is the config's `vision` block.
type Vision struct {
	Exe        string
	MMProj     string
	Model      string
	GPU        bool
	MaxTokens  int  // 0: not set
	Threads    int  // 0: not set
	CUDADevice *int // nil: not set
	Remote     bool // fork key: the encoder is on another PC
	Hot        bool // fork key: started on the first image
}

// Problem is one thing wrong with a config, tied to the key it is about.
type Problem struct {
	Key string // e.g. "vision.mmproj"; "" for the whole file
	Msg string
}

func (p Problem) String() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// Placement is where this config runs the image encoder.
func (c *Config) Placement() settings.Placement {
	switch {
	case c.Vision == nil:
		return settings.PlacementOff
	case c.Vision.Remote || isRelay(c.Vision.Exe):
		return settings.PlacementRemote
	case c.Vision.GPU:
		return settings.PlacementGPU
	default:
		return settings.PlacementCPU
	}
}

// Port is the config's `port`, else Strata's default 8080.
func (c *Config) Port() int {
	if c.port > 0 {
		return c.port
	}
	return 8080
}

// Host is the config's `host`, else 127.0.0.1.
func (c *Config) Host() string {
	if c.host != "" {
		return c.host
	}
	return "127.0.0.1"
}

// APIKey is the config's `api_key` ("" when none). Never log it.
func (c *Config) APIKey() string { return c.apiKey }

// LogPath is the engine log (the `log` key) as an absolute path; "" when unset.
func (c *Config) LogPath() string {
	if c.Log == "" {
		return ""
	}
	return c.resolve(c.Log)
}

// VRAMReserveMiB is the value after --vram-reserve-mib in args (0: none).
func (c *Config) VRAMReserveMiB() int {
	for i, a := range c.Args {
		if a == "--vram-reserve-mib" && i+1 < len(c.Args) {
			n, _ := strconv.Atoi(c.Args[i+1])
			return n
		}
		if v, ok := strings.CutPrefix(a, "--vram-reserve-mib="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// Err is nil for a valid config, else one error naming the file and every
// problem.
// LazyKey is the key of the problem "lazy loading with vision": Strata
// refuses to start with both ("lazy loading is text-only; disable vision in
// the config", exit 2), so a restart cannot help; a vision change fixes it
// (on: lazy loading is turned off, shown in the diff; off: the vision block
// goes and lazy loading stays).
const LazyKey = "lazy_load"

// LazyWithVision reports a config Strata refuses to start: lazy loading
// (`lazy_load`, or `--lazy` in args) together with a vision block.
func (c *Config) LazyWithVision() bool { return c.Lazy && c.Vision != nil }

// lazyProblem is the LazyKey problem, in words with the fix.
func (c *Config) lazyProblem() Problem {
	what := "is on"
	if !c.lazyKey {
		what = "(--lazy in args) is on"
	}
	return Problem{Key: LazyKey, Msg: what + " together with vision, and Strata refuses to start with both (\"lazy loading is text-only; disable vision in the config\"): " + LazyFix}
}

// LazyFix says how to fix lazy loading with vision, in words.
const LazyFix = "choose where pictures are read again (the tray's Vision menu, or strata-service vision gpu, cpu or remote), which turns lazy loading off, " +
	"or turn vision off (strata-service vision off) to keep lazy loading"

// EditErr is Err without the problems a vision change fixes itself (lazy
// loading with vision): what keeps the companion from editing the config.
func (c *Config) EditErr() error {
	k := *c
	k.Problems = nil
	for _, p := range c.Problems {
		if p.Key != LazyKey {
			k.Problems = append(k.Problems, p)
		}
	}
	return k.Err()
}

func (c *Config) Err() error {
	if len(c.Problems) == 0 {
		return nil
	}
	var parts []string
	for _, p := range c.Problems {
		parts = append(parts, p.String())
	}
	return fmt.Errorf("%s: %s", c.Path, strings.Join(parts, "; "))
}

// Read parses configPath. It fails only when the file cannot be read or is
// not a JSON object; everything else wrong is in Problems.
func Read(configPath string) (*Config, error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, err
	}
	b, err := ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("reading the Strata config: %w", err)
	}
	c, err := fromBytes(abs, b)
	if err != nil {
		return nil, err
	}
	c.Problems = append(c.Problems, c.fileProblems()...)
	return c, nil
}

// notJSONError is the refusal for a file that is not JSON.
func notJSONError(path string, err error) error {
	return fmt.Errorf("%s is not valid JSON (%v); nothing was changed. Fix the file, or put a backup back with `strata-service vision restore`", path, err)
}

// fromBytes parses b as the config at path: shapes only, no file checks.
func fromBytes(path string, b []byte) (*Config, error) {
	d, err := parse(b)
	if err != nil {
		return nil, notJSONError(path, err)
	}
	if d.root.kind != kObject {
		return nil, fmt.Errorf("%s is JSON but not a Strata config (it is %s, not an object with keys); nothing was changed", path, d.root.kind)
	}
	c := &Config{Path: path, Root: filepath.Dir(path), Raw: b}
	c.Problems = shapeProblems(d)
	r := d.root
	c.Exe = d.strKey(r, "exe")
	c.Cwd = d.strKey(r, "cwd")
	c.Log = d.strKey(r, "log")
	c.host = d.strKey(r, "host")
	c.apiKey = d.strKey(r, "api_key")
	if m, _ := r.get("port"); m != nil {
		c.port, _ = d.intVal(m.val)
	}
	if m, _ := r.get("args"); m != nil && m.val.kind == kArray {
		for _, e := range m.val.elems {
			s, _ := d.str(e)
			c.Args = append(c.Args, s)
		}
	}
	if m, _ := r.get("env"); m != nil && m.val.kind == kObject {
		c.Env = map[string]string{}
		for _, em := range m.val.members {
			s, _ := d.str(em.val)
			c.Env[em.key] = s
		}
	}
	c.Lazy = d.truthy(r, "lazy_load")
	c.lazyKey = c.Lazy
	for _, a := range c.Args {
		c.Lazy = c.Lazy || a == "--lazy"
	}
	if m, _ := r.get("vision"); m != nil && m.val.kind == kObject {
		v := m.val
		c.Vision = &Vision{
			Exe:    d.strKey(v, "exe"),
			MMProj: d.strKey(v, "mmproj"),
			Model:  d.strKey(v, "model"),
			GPU:    d.truthy(v, "gpu"),
			Remote: d.truthy(v, "remote"),
			Hot:    d.truthy(v, "hot"),
		}
		if x, _ := v.get("max_tokens"); x != nil {
			c.Vision.MaxTokens, _ = d.intVal(x.val)
		}
		if x, _ := v.get("threads"); x != nil {
			c.Vision.Threads, _ = d.intVal(x.val)
		}
		if x, _ := v.get("cuda_device"); x != nil {
			if n, ok := d.intVal(x.val); ok {
				c.Vision.CUDADevice = &n
			}
		}
	}
	if c.LazyWithVision() {
		c.Problems = append(c.Problems, c.lazyProblem())
	}
	return c, nil
}

func (d *doc) strKey(n *node, key string) string {
	m, _ := n.get(key)
	if m == nil {
		return ""
	}
	s, _ := d.str(m.val)
	return s
}

// intVal reads a whole number (JSON allows 1024.0 and 1e3; Python reads
// those as floats, which Strata would reject, so they are not whole here).
func (d *doc) intVal(n *node) (int, bool) {
	if n == nil || n.kind != kNumber {
		return 0, false
	}
	i, err := strconv.ParseInt(string(d.text(n)), 10, 64)
	if err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		return 0, false
	}
	return int(i), true
}

// truthy is Python's truthiness for the value of key (Strata reads flags with
// `if vision.get("gpu")`).
func (d *doc) truthy(n *node, key string) bool {
	m, _ := n.get(key)
	if m == nil {
		return false
	}
	switch m.val.kind {
	case kTrue:
		return true
	case kNumber:
		f, err := strconv.ParseFloat(string(d.text(m.val)), 64)
		return err == nil && f != 0
	case kString:
		s, _ := d.str(m.val)
		return s != ""
	case kObject:
		return len(m.val.members) > 0
	case kArray:
		return len(m.val.elems) > 0
	}
	return false
}

// shapeProblems checks the keys Strata and the companion read.
func shapeProblems(d *doc) []Problem {
	var ps []Problem
	add := func(key, format string, a ...any) { ps = append(ps, Problem{key, fmt.Sprintf(format, a...)}) }
	r := d.root
	for _, k := range []string{"exe", "cwd", "log", "host", "api_key"} {
		if m, _ := r.get(k); m != nil && m.val.kind != kString {
			add(k, "must be a string, not %s", m.val.kind)
		}
	}
	for _, k := range []string{"vision", "args", "env"} {
		if r.count(k) > 1 {
			add(k, "appears %d times; keep one", r.count(k))
		}
	}
	if m, _ := r.get("port"); m != nil {
		if p, ok := d.intVal(m.val); !ok || p < 1 || p > 65535 {
			add("port", "must be a whole number from 1 to 65535, not %s", d.text(m.val))
		}
	}
	if m, _ := r.get("args"); m != nil {
		if m.val.kind != kArray {
			add("args", "must be a list of strings, not %s", m.val.kind)
		} else {
			for i, e := range m.val.elems {
				if e.kind != kString {
					add(fmt.Sprintf("args[%d]", i), "must be a string, not %s (%s)", e.kind, d.text(e))
				}
			}
		}
	}
	if m, _ := r.get("env"); m != nil {
		if m.val.kind != kObject {
			add("env", "must be an object of names and string values, not %s", m.val.kind)
		} else {
			for _, em := range m.val.members {
				if em.val.kind != kString {
					add("env."+em.key, "must be a string, not %s", em.val.kind)
				}
			}
		}
	}
	m, _ := r.get("vision")
	if m == nil || m.val.kind == kNull {
		return ps
	}
	v := m.val
	if v.kind != kObject {
		return append(ps, Problem{"vision", fmt.Sprintf("must be an object with mmproj and model (or absent for no images), not %s", v.kind)})
	}
	for _, vm := range v.members {
		if v.count(vm.key) > 1 {
			add("vision."+vm.key, "appears %d times; keep one", v.count(vm.key))
			break
		}
	}
	for _, k := range []string{"mmproj", "model"} {
		x, _ := v.get(k)
		switch {
		case x == nil:
			add("vision."+k, "is missing (the encoder needs it)")
		case x.val.kind != kString:
			add("vision."+k, "must be a file path (a string), not %s", x.val.kind)
		default:
			if s, _ := d.str(x.val); s == "" {
				add("vision."+k, "is empty")
			}
		}
	}
	if x, _ := v.get("exe"); x != nil {
		if s, ok := d.str(x.val); !ok || s == "" {
			add("vision.exe", "must be the encoder program's path (a non-empty string)")
		}
	}
	for _, k := range []string{"gpu", "remote", "hot"} {
		if x, _ := v.get(k); x != nil && x.val.kind != kTrue && x.val.kind != kFalse {
			if _, ok := d.intVal(x.val); !ok || k != "gpu" {
				add("vision."+k, "must be true or false, not %s", d.text(x.val))
			}
		}
	}
	for _, k := range []string{"max_tokens", "threads", "cuda_device"} {
		if x, _ := v.get(k); x != nil {
			if n, ok := d.intVal(x.val); !ok || n < 0 {
				add("vision."+k, "must be a whole number of 0 or more, not %s", d.text(x.val))
			}
		}
	}
	return ps
}

// statFile is how file checks look at the disk; tests of Windows-shaped
// configs map Windows paths into a temporary folder through it.
var statFile = func(p string) error { _, err := os.Stat(p); return err }

// base is the folder relative paths in the config resolve against: `cwd`
// when set (itself relative to the install), else the install folder (the
// run scripts start the server there).
func (c *Config) base() string {
	if c.Cwd != "" {
		if isAbs(c.Cwd) {
			return c.Cwd
		}
		return filepath.Join(c.Root, c.Cwd)
	}
	return c.Root
}

// Resolve is p as Strata reads it: relative paths against the config's `cwd`
// (itself relative to the install folder), else the install folder; "" stays
// "". This is the one place the companion resolves a config's paths.
func (c *Config) Resolve(p string) string {
	if p == "" {
		return ""
	}
	return c.resolve(p)
}

// VisionFiles are the vision block's mmproj and model, resolved as Strata
// resolves them; both "" when the config has no vision block.
func (c *Config) VisionFiles() (mmproj, model string) {
	if c.Vision == nil {
		return "", ""
	}
	return c.Resolve(c.Vision.MMProj), c.Resolve(c.Vision.Model)
}

// LocalEncoder is the install's own strata-vision (ROOT/engine/strata-vision,
// .exe on Windows), "" when it is not there.
func (c *Config) LocalEncoder() string {
	name := "strata-vision"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(c.Root, "engine", name)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

func (c *Config) resolve(p string) string {
	if isAbs(p) {
		return p
	}
	return filepath.Join(c.base(), p)
}

// isAbs also accepts Windows drive and UNC paths, which a config written on
// Windows holds whatever OS reads it.
func isAbs(p string) bool {
	if filepath.IsAbs(p) {
		return true
	}
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return strings.HasPrefix(p, `\\`)
}

// fileProblems checks that the programs and models the config names exist.
func (c *Config) fileProblems() []Problem {
	var ps []Problem
	check := func(key, p, what string) {
		if p == "" {
			return
		}
		full := c.resolve(p)
		if err := statFile(full); err != nil {
			msg := fmt.Sprintf("%s %s does not exist", what, full)
			if !errors.Is(err, os.ErrNotExist) {
				msg = fmt.Sprintf("%s %s cannot be read: %v", what, full, err)
			}
			ps = append(ps, Problem{key, msg})
		}
	}
	check("exe", c.Exe, "the engine")
	if v := c.Vision; v != nil {
		check("vision.exe", v.Exe, "the encoder program")
		check("vision.mmproj", v.MMProj, "the vision projector")
		check("vision.model", v.Model, "the text model (vocabulary)")
	}
	return ps
}

// isRelay reports whether exe is the companion's relay.
func isRelay(exe string) bool {
	b := strings.ToLower(exe)
	if i := strings.LastIndexAny(b, `/\`); i >= 0 {
		b = b[i+1:]
	}
	return strings.HasPrefix(b, "strata-vision-relay")
}
