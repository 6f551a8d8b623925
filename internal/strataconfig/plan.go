// Package strataconfig reads and edits Strata's config file
// (ROOT/strata-<tag>.json) without losing a byte of what the companion does
// not own: edits are spliced into the JSON text, so unknown keys, key order,
// number spellings and the file's own indentation and line endings survive,
// and a round trip with no change is byte-identical.
//
// The companion owns the `vision` block, the `--vision` and
// `--vram-reserve-mib` entries of `args`, and the STRATA_COMPANION_SETTINGS
// entry of `env`; it never touches anything else.
package strataconfig

import (
	"github.com/strata-companion/companion/internal/gguf"

	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

// EnvSettings is the env entry that hands the relay the companion settings.
const EnvSettings = "STRATA_COMPANION_SETTINGS"

// VisionRequest says where the image encoder should run.
type VisionRequest struct {
	Placement settings.Placement // gpu, cpu, remote, off
	// Device (gpu) puts the encoder on another GPU (cuda_device, an
	// nvidia-smi index); nil keeps what the config has, < 0 removes it.
	Device *int
	// Threads (cpu): encoder threads; 0 keeps the config's value, else half
	// the cores.
	Threads int
	// Host (remote): [user@]host[:port]. Only the caller records it (in the
	// companion settings); the config gets the relay and the env entry.
	Host string
	// RelayExe (remote): the absolute path of strata-vision-relay; "" means
	// beside this program (os.Executable()).
	RelayExe string
	// SettingsPath (remote): the companion settings file, handed to the relay
	// through env as STRATA_COMPANION_SETTINGS ("" = locations.SettingsFile()).
	SettingsPath string
	// VRAMTotalMiB is the server GPU's memory (0: unknown). When args has no
	// --vram-reserve-mib, cards of 12 GB or less get 1000, others 700.
	VRAMTotalMiB int
}

// Change is a planned edit of one config file.
type Change struct {
	Path     string // absolute
	Old, New []byte
	// Notes says what the plan chose on its own (e.g. a Q8_0 mmproj for
	// the CPU), for the person reading the diff.
	Notes []string
}

// Changed reports whether applying would write anything.
func (c *Change) Changed() bool { return !bytes.Equal(c.Old, c.New) }

// PlanVision validates the config and the result of the change, and returns
// the change; it writes nothing.
func PlanVision(configPath string, req VisionRequest) (*Change, error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, err
	}
	old, err := ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("reading the Strata config: %w", err)
	}
	// Edit the file itself, not a link to it: a rename would replace the
	// link with a plain file.
	abs = RealPath(abs)
	if err := refuseReadOnly(abs); err != nil {
		return nil, err
	}
	p := &planner{path: abs, root: filepath.Dir(abs), req: req}
	out, err := p.plan(old)
	if err != nil {
		return nil, err
	}
	// The result must be a config Strata can start with.
	c, err := fromBytes(abs, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: the edited config would not be valid (%v); nothing was changed", err)
	}
	if c.Vision != nil && c.Lazy {
		return nil, fmt.Errorf("internal error: the edited config would keep lazy loading with vision, which Strata refuses; nothing was changed")
	}
	c.Problems = append(c.Problems, c.fileProblems()...)
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("not changing it: %w", err)
	}
	return &Change{Path: abs, Old: old, New: out, Notes: p.notes}, nil
}

type planner struct {
	path, root string
	req        VisionRequest
	notes      []string
}

func (p *planner) note(format string, a ...any) { p.notes = append(p.notes, fmt.Sprintf(format, a...)) }

// plan turns the config text src into the edited text.
func (p *planner) plan(src []byte) ([]byte, error) {
	if !p.req.Placement.Valid() {
		return nil, fmt.Errorf("unknown vision placement %q (want gpu, cpu, remote or off)", p.req.Placement)
	}
	cur, err := fromBytes(p.path, src)
	if err != nil {
		return nil, err
	}
	if err := cur.EditErr(); err != nil { // lazy loading with vision: turnOffLazy or vision off fixes it
		return nil, fmt.Errorf("not changing it: %w", err)
	}
	before := cur.Placement()
	if p.req.Placement == settings.PlacementOff {
		if src, err = deleteMember(src, nil, "vision"); err != nil {
			return nil, err
		}
		if src, err = removeArg(src, "--vision"); err != nil {
			return nil, err
		}
		if before == settings.PlacementRemote {
			return removeOurEnv(src)
		}
		return src, nil
	}

	if cur.Vision == nil {
		if src, err = p.addVisionBlock(src); err != nil {
			return nil, err
		}
		if cur, err = fromBytes(p.path, src); err != nil {
			return nil, err
		}
		// A block taken from a backup says where vision ran then; the
		// rules below treat that as the placement we come from.
		before = cur.Placement()
	}
	v := cur.Vision
	set := func(key, val string) {
		if err == nil {
			src, err = setValue(src, []string{"vision"}, key, val)
		}
	}
	del := func(key string) {
		if err == nil {
			src, err = deleteMember(src, []string{"vision"}, key)
		}
	}
	st := mustStyle(src)
	// max_tokens: the placement's default unless the user chose a value;
	// the other placement's default is not a choice, so it follows.
	maxTokens := func(def, otherDef int) {
		if v.MaxTokens == 0 || v.MaxTokens == otherDef && (p.req.Placement == settings.PlacementCPU) != (before == settings.PlacementCPU) {
			set("max_tokens", strconv.Itoa(def))
		}
	}
	leavingRemote := before == settings.PlacementRemote && p.req.Placement != settings.PlacementRemote

	switch p.req.Placement {
	case settings.PlacementGPU:
		set("gpu", "true")
		maxTokens(1024, 300)
		del("threads")
		if d := p.req.Device; d != nil {
			if *d < 0 {
				del("cuda_device")
			} else {
				set("cuda_device", strconv.Itoa(*d))
			}
		}
		if before == settings.PlacementCPU && isQ8(v.MMProj) {
			if alt := p.siblingMMProj(cur, v.MMProj, settings.PlacementGPU); alt != "" {
				set("mmproj", st.jsonString(alt))
				p.note("using %s, the full-precision projector, for the GPU", filepath.Base(alt))
			}
		}
	case settings.PlacementCPU:
		set("gpu", "false")
		maxTokens(300, 1024)
		switch {
		case p.req.Threads > 0:
			set("threads", strconv.Itoa(p.req.Threads))
		case v.Threads == 0:
			set("threads", strconv.Itoa(max(1, runtime.NumCPU()/2)))
		}
		del("cuda_device")
		if !isQ8(v.MMProj) {
			if alt := p.siblingMMProj(cur, v.MMProj, settings.PlacementCPU); alt != "" {
				set("mmproj", st.jsonString(alt))
				p.note("using %s: Q8_0 is the projector Strata recommends for the CPU", filepath.Base(alt))
			}
		}
	case settings.PlacementRemote:
		relay, rerr := p.relayExe()
		if rerr != nil {
			return nil, rerr
		}
		set("exe", st.jsonString(relay))
		set("remote", "true")
		if !isRelay(v.Exe) || !v.Remote {
			p.note(`"remote": true with strata-vision-relay as "exe": Strata hands each picture to the relay, which reads it where the companion's settings say (this PC's CPU, the second PC, or nowhere), so a later move among those needs no restart`)
		}
		// The relay routes each picture by the settings (second PC, this
		// PC's CPU, off) and runs no GPU encoder here: Strata must not
		// count it as one (it then also hides the GPU from the relay's
		// local CPU encoder).
		set("gpu", "false")
		maxTokens(1024, 300)
		del("threads")
		if err == nil {
			src, err = p.setOurEnv(src)
		}
	}
	if err != nil {
		return nil, err
	}
	if leavingRemote || (isRelay(v.Exe) && p.req.Placement != settings.PlacementRemote) {
		if p.req.Placement != settings.PlacementRemote {
			del("remote")
		}
		exe, xerr := p.localEncoder(src)
		if xerr != nil {
			return nil, xerr
		}
		set("exe", exe)
		if err == nil {
			src, err = removeOurEnv(src)
		}
	}
	if err != nil {
		return nil, err
	}
	if src, err = p.turnOffLazy(src); err != nil {
		return nil, err
	}
	return p.ensureArgs(src)
}

// turnOffLazy turns Strata's lazy loading off, which is text-only: with
// `lazy_load` (or `--lazy` in args) and a vision block the server refuses to
// start ("lazy loading is text-only; disable vision in the config"). The
// person asked for pictures, so the model is loaded at start instead; the
// note in the plan says so (the CLI and the wizard show it with the diff).
func (p *planner) turnOffLazy(src []byte) ([]byte, error) {
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	var what []string
	if d.truthy(d.root, "lazy_load") {
		if src, err = setValue(src, nil, "lazy_load", "false"); err != nil {
			return nil, err
		}
		what = append(what, "lazy_load")
	}
	if c, _ := fromBytes(p.path, src); c != nil && idx(c.Args, "--lazy") >= 0 {
		if src, err = removeArg(src, "--lazy"); err != nil {
			return nil, err
		}
		what = append(what, "--lazy in args")
	}
	if len(what) > 0 {
		p.note("turned %s off: Strata's lazy loading is text-only and the server would refuse to start with vision on; the model now loads when Strata starts (set lazy_load back after turning vision off if you want it)", strings.Join(what, " and "))
	}
	return src, nil
}

func mustStyle(src []byte) style {
	d, err := parse(src)
	if err != nil {
		return style{nl: "\n", unit: "  ", colonSpace: " "}
	}
	return d.style()
}

func isQ8(p string) bool { return strings.Contains(strings.ToLower(filepath.Base(p)), "q8_0") }

// ensureArgs puts --vision and --vram-reserve-mib N into args the way
// Strata's setup does, keeping a reserve value that is already there.
func (p *planner) ensureArgs(src []byte) ([]byte, error) {
	reserve := "700"
	if p.req.VRAMTotalMiB > 0 && p.req.VRAMTotalMiB <= 12288 {
		reserve = "1000"
	}
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	st := d.style()
	m, _ := d.root.get("args")
	if m == nil {
		items := []string{st.jsonString("--vision"), st.jsonString("--vram-reserve-mib"), st.jsonString(reserve)}
		return d.setMember(d.root, "args", -1, func(indent string, multi bool) string { return st.renderList(items, indent, multi) }), nil
	}
	args := argStrings(d, m.val)
	if idx(args, "--vision") < 0 {
		// Beside --vram-reserve-mib when it is there (where setup puts it,
		// so off-then-on gives the same text back), else at the end.
		at := idx(args, "--vram-reserve-mib")
		if at < 0 {
			at = len(args)
		}
		src = d.insertItem(m.val, at, func(string, bool) string { return st.jsonString("--vision") })
		if d, err = parse(src); err != nil {
			return nil, err
		}
		m, _ = d.root.get("args")
		args = argStrings(d, m.val)
	}
	if hasReserveEq(args) {
		// "--vram-reserve-mib=N" in one entry: already there.
		return src, nil
	}
	if at := idx(args, "--vram-reserve-mib"); at < 0 {
		src = d.insertItem(m.val, len(args), func(string, bool) string { return st.jsonString("--vram-reserve-mib") })
		if d, err = parse(src); err != nil {
			return nil, err
		}
		m, _ = d.root.get("args")
		src = d.insertItem(m.val, len(args)+1, func(string, bool) string { return st.jsonString(reserve) })
	} else if at == len(args)-1 {
		src = d.insertItem(m.val, len(args), func(string, bool) string { return st.jsonString(reserve) })
	}
	return src, nil
}

func hasReserveEq(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "--vram-reserve-mib=") {
			return true
		}
	}
	return false
}

func argStrings(d *doc, n *node) []string {
	var out []string
	for _, e := range n.elems {
		s, _ := d.str(e)
		out = append(out, s)
	}
	return out
}

func idx(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// removeArg removes every args entry equal to a.
func removeArg(src []byte, a string) ([]byte, error) {
	for {
		d, err := parse(src)
		if err != nil {
			return nil, err
		}
		m, _ := d.root.get("args")
		if m == nil || m.val.kind != kArray {
			return src, nil
		}
		i := idx(argStrings(d, m.val), a)
		if i < 0 {
			return src, nil
		}
		src = d.removeItem(m.val, i)
	}
}

// setOurEnv adds (or updates) STRATA_COMPANION_SETTINGS in the top-level env,
// keeping every other entry.
func (p *planner) setOurEnv(src []byte) ([]byte, error) {
	sp := p.req.SettingsPath
	if sp == "" {
		sp = locations.SettingsFile()
	}
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	st := d.style()
	if m, _ := d.root.get("env"); m != nil {
		if e, _ := m.val.get(EnvSettings); e != nil || m.val.kind != kObject {
			return setValue(src, []string{"env"}, EnvSettings, st.jsonString(sp))
		}
		// Back where the newest backup had it, so remote -> off -> remote
		// gives the same text back.
		at := len(m.val.members)
		if after, first := p.envSlotFromBackups(); first {
			at = 0
		} else if _, i := m.val.get(after); after != "" && i >= 0 {
			at = i + 1
		}
		return d.setMember(m.val, EnvSettings, at, func(string, bool) string { return st.jsonString(sp) }), nil
	}
	val := func(indent string, multi bool) string {
		return st.renderObject([]field{{EnvSettings, st.jsonString(sp)}}, indent, !multi)
	}
	return d.setMember(d.root, "env", -1, val), nil
}

// envSlotFromBackups says where our env entry stood in the newest backup
// that had one: after the key returned, or first.
func (p *planner) envSlotFromBackups() (after string, first bool) {
	for _, b := range listBackups(p.path) {
		raw, err := ReadFile(b.path)
		if err != nil {
			continue
		}
		d, err := parse(raw)
		if err != nil || d.root.kind != kObject {
			continue
		}
		env := d.lookup("env")
		if env == nil || env.kind != kObject {
			continue
		}
		if _, i := env.get(EnvSettings); i == 0 {
			return "", true
		} else if i > 0 {
			return env.members[i-1].key, false
		}
	}
	return "", false
}

// removeOurEnv removes our env entry, and env itself when that leaves it
// empty (the companion made it).
func removeOurEnv(src []byte) ([]byte, error) {
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	m, _ := d.root.get("env")
	if m == nil || m.val.kind != kObject {
		return src, nil
	}
	if e, _ := m.val.get(EnvSettings); e == nil {
		return src, nil
	}
	if len(m.val.members) == 1 {
		return deleteMember(src, nil, "env")
	}
	return deleteMember(src, []string{"env"}, EnvSettings)
}

// relayExe is the relay's absolute path, which must exist.
func (p *planner) relayExe() (string, error) {
	r := p.req.RelayExe
	if r == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find this program's folder to locate strata-vision-relay: %v", err)
		}
		r = filepath.Join(filepath.Dir(self), "strata-vision-relay"+exeSuffix())
	}
	if !isAbs(r) {
		abs, err := filepath.Abs(r)
		if err != nil {
			return "", err
		}
		r = abs
	}
	if err := statFile(r); err != nil {
		return "", fmt.Errorf("the relay %s is missing (%v); reinstall Strata Companion, which puts it beside strata-service", r, err)
	}
	return r, nil
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// localEncoder is the JSON text for Strata's own encoder, used when vision
// stops being remote: what the newest backup with a local encoder had, else
// ROOT/engine/strata-vision(.exe).
func (p *planner) localEncoder(src []byte) (string, error) {
	st := mustStyle(src)
	for _, b := range listBackups(p.path) {
		raw, err := ReadFile(b.path)
		if err != nil {
			continue
		}
		c, err := fromBytes(p.path, raw)
		if err != nil || c.Vision == nil || c.Vision.Exe == "" || isRelay(c.Vision.Exe) {
			continue
		}
		if statFile(c.resolve(c.Vision.Exe)) == nil {
			return st.jsonString(c.Vision.Exe), nil
		}
	}
	for _, name := range []string{"strata-vision" + exeSuffix(), "strata-vision.exe", "strata-vision"} {
		full := filepath.Join(p.root, "engine", name)
		if statFile(full) == nil {
			return st.jsonString(full), nil
		}
	}
	return "", fmt.Errorf("Strata's encoder %s is missing; run Strata's setup again to reinstall it", filepath.Join(p.root, "engine", "strata-vision"+exeSuffix()))
}

// addVisionBlock adds a vision block to a config that has none: the one the
// newest backup had (in the same place, byte for byte), else one built from
// the projector and model found in the install.
func (p *planner) addVisionBlock(src []byte) ([]byte, error) {
	d, err := parse(src)
	if err != nil {
		return nil, err
	}
	if m, _ := d.root.get("vision"); m != nil {
		// "vision": null counts as no block; drop it first.
		if src, err = deleteMember(src, nil, "vision"); err != nil {
			return nil, err
		}
		if d, err = parse(src); err != nil {
			return nil, err
		}
	}
	st := d.style()
	if text, after, before, from := p.visionFromBackups(); text != "" {
		at := -1
		if _, i := d.root.get(after); after != "" && i >= 0 {
			at = i + 1
		} else if _, i := d.root.get(before); before != "" && i >= 0 {
			at = i
		}
		p.note("vision settings taken from the backup %s", filepath.Base(from))
		return d.setMember(d.root, "vision", at, func(indent string, multi bool) string {
			return reindent(text, indent, st.nl)
		}), nil
	}
	cur, _ := fromBytes(p.path, src)
	mmproj, others := p.findMMProj(cur)
	model := p.findModel(cur)
	if mmproj == "" || model == "" {
		e := &NoProjectorError{Dirs: p.modelDirs(), Others: others, Setup: "gpu"} // setup knows gpu|cpu|no; the GPU projector also serves a second PC
		if mmproj != "" {
			e.Missing, e.Others = "text model", nil
		}
		if p.req.Placement == settings.PlacementCPU {
			e.Setup = "cpu"
		}
		return nil, e
	}
	exe, err := p.localEncoder(src)
	if err != nil {
		return nil, err
	}
	p.note("vision projector: %s; vocabulary from: %s", mmproj, model)
	fields := []field{{"exe", exe}, {"mmproj", st.jsonString(mmproj)}, {"model", st.jsonString(model)}}
	return d.setMember(d.root, "vision", -1, func(indent string, multi bool) string {
		return st.renderObject(fields, indent, !multi)
	}), nil
}

// reindent moves a block's continuation lines from the indentation it had to
// indent, and gives it the file's line ending.
func reindent(text, indent, nl string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) == 1 {
		return text
	}
	// The closing brace's line has the block's original indentation.
	last := lines[len(lines)-1]
	old := last[:len(last)-len(strings.TrimLeft(last, " \t"))]
	for i := 1; i < len(lines); i++ {
		lines[i] = indent + strings.TrimPrefix(lines[i], old)
	}
	return strings.Join(lines, nl)
}

// visionFromBackups returns the raw text of the vision block in the newest
// backup that has a usable one, with the keys around it there.
func (p *planner) visionFromBackups() (text, after, before, from string) {
	for _, b := range listBackups(p.path) {
		raw, err := ReadFile(b.path)
		if err != nil {
			continue
		}
		c, err := fromBytes(p.path, raw)
		if err != nil || c.Vision == nil || c.EditErr() != nil {
			continue
		}
		if statFile(c.resolve(c.Vision.MMProj)) != nil || statFile(c.resolve(c.Vision.Model)) != nil {
			continue
		}
		d, _ := parse(raw)
		_, i := d.root.get("vision")
		if i > 0 {
			after = d.root.members[i-1].key
		}
		if i+1 < len(d.root.members) {
			before = d.root.members[i+1].key
		}
		return string(d.text(d.root.members[i].val)), after, before, b.path
	}
	return "", "", "", ""
}

// modelDirs are where Strata keeps GGUF files: ROOT/models and the data
// folder beside ROOT.
func (p *planner) modelDirs() []string {
	parent := filepath.Dir(p.root)
	return []string{
		filepath.Join(p.root, "models"),
		filepath.Join(parent, "Strata-data"),
		p.root,
	}
}

// ggufs lists the .gguf files in dir and its subfolders (three levels).
func ggufs(dir string, depth int) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		full := filepath.Join(dir, e.Name())
		if e.IsDir() && depth > 0 && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, ggufs(full, depth-1)...)
		} else if strings.HasSuffix(strings.ToLower(e.Name()), ".gguf") {
			out = append(out, full)
		}
	}
	return out
}

// projectorFits says whether a projector may belong to the model file
// modelBase: a projector that names no model fits any; one that names a
// model fits only a model file whose name starts with it.
func projectorFits(mmproj, modelBase string) bool {
	stem := gguf.ProjectorStem(mmproj)
	if stem == "" || modelBase == "" {
		return true
	}
	m := strings.ReplaceAll(strings.ToLower(modelBase), "_", "-")
	return strings.HasPrefix(m, strings.ReplaceAll(stem, "_", "-"))
}

func isMMProj(p string) bool { return strings.Contains(strings.ToLower(filepath.Base(p)), "mmproj") }

// mmprojRank orders projectors for a placement: Q8_0 first for the CPU;
// BF16, then F16, then F32 for a GPU.
func mmprojRank(p string, pl settings.Placement) int {
	b := strings.ToLower(filepath.Base(p))
	if pl == settings.PlacementCPU {
		if strings.Contains(b, "q8_0") {
			return 0
		}
		return 1
	}
	for i, k := range []string{"bf16", "f16", "f32"} {
		if strings.Contains(b, k) {
			return i
		}
	}
	return 3
}

// NoProjectorError is a plan for a config with no vision block that found
// no projector of the model's own (or no text model for the encoder's
// vocabulary) in the install.
type NoProjectorError struct {
	Missing string   // "" (the projector) or "text model"
	Dirs    []string // the folders searched
	// Others are the projectors found that another config of the install
	// uses for its own model (file name -> that config's file name).
	Others map[string]string
	Setup  string // Strata's setup --vision value that downloads one: gpu or cpu
}

func (e *NoProjectorError) Error() string {
	missing := e.Missing
	if missing == "" {
		missing = "vision projector (mmproj GGUF)"
	}
	return fmt.Sprintf("the config has no vision block and no %s was found in %s%s; run Strata's setup with --vision %s to download it, then try again", missing, strings.Join(e.Dirs, ", "), e.othersText(), e.Setup)
}

// othersText names the projectors left out because they are another
// model's ("" when none was).
func (e *NoProjectorError) othersText() string {
	if len(e.Others) == 0 {
		return ""
	}
	var l []string
	for f, cfg := range e.Others {
		l = append(l, fmt.Sprintf("%s is %s's", f, cfg))
	}
	sort.Strings(l)
	return " (" + strings.Join(l, "; ") + ")"
}

// Why is the reason in a sentence about the model: "no image projector of
// its own is in DIR (…)".
func (e *NoProjectorError) Why() string {
	if e.Missing != "" {
		return fmt.Sprintf("no %s for the encoder's vocabulary is in %s", e.Missing, strings.Join(e.Dirs, ", "))
	}
	return fmt.Sprintf("no image projector of its own is in %s%s", strings.Join(e.Dirs, ", "), e.othersText())
}

// modelBaseOf is the lower-case file name of the text model c's args name.
func modelBaseOf(c *Config) string {
	for _, a := range c.Args {
		if strings.HasSuffix(strings.ToLower(a), ".gguf") && !isMMProj(a) {
			return strings.ToLower(filepath.Base(a))
		}
	}
	return ""
}

// claimed lists the projectors the install's other configs use for another
// model than modelBase: their full path -> that config's file name.
func (p *planner) claimed(modelBase string) map[string]string {
	out := map[string]string{}
	others, _ := filepath.Glob(filepath.Join(p.root, "strata-*.json"))
	for _, o := range others {
		if RealPath(o) == p.path {
			continue
		}
		c, err := Read(o)
		if err != nil || c.Vision == nil || c.Vision.MMProj == "" || modelBaseOf(c) == modelBase {
			continue
		}
		out[filepath.Clean(c.resolve(c.Vision.MMProj))] = filepath.Base(o)
	}
	return out
}

// findMMProj is the model's own projector, the best for the placement: one
// whose name names the model, or one that names no model and that no other
// config of the install uses for its own model. others are the projectors
// left out for that last reason (file name -> the config using it).
func (p *planner) findMMProj(c *Config) (mmproj string, others map[string]string) {
	var all []string
	// Only the model's own projector: one whose name names another model
	// is never taken.
	modelBase := modelBaseOf(c)
	claimed := p.claimed(modelBase)
	for _, d := range p.modelDirs() {
		depth := 3
		if d == p.root {
			depth = 0
		}
		for _, f := range ggufs(d, depth) {
			if !isMMProj(f) || !projectorFits(f, modelBase) {
				continue
			}
			if cfg, ok := claimed[filepath.Clean(f)]; ok && gguf.ProjectorStem(f) == "" {
				if others == nil {
					others = map[string]string{}
				}
				others[filepath.Base(f)] = cfg
				continue
			}
			all = append(all, f)
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		return mmprojRank(all[i], p.req.Placement) < mmprojRank(all[j], p.req.Placement)
	})
	if len(all) == 0 {
		return "", others
	}
	return all[0], nil
}

// siblingMMProj finds a better projector for pl in the folder of the current
// one ("" when the current one is already the best there).
func (p *planner) siblingMMProj(c *Config, current string, pl settings.Placement) string {
	full := c.resolve(current)
	dir := filepath.Dir(full)
	best, bestRank := "", mmprojRank(full, pl)
	for _, f := range ggufs(dir, 0) {
		if !isMMProj(f) || gguf.ProjectorStem(f) != gguf.ProjectorStem(full) {
			continue // another model's projector (the same family may share n_embd)
		}
		if r := mmprojRank(f, pl); r < bestRank {
			best, bestRank = f, r
		}
	}
	if best == "" {
		return ""
	}
	// Keep the config's own spelling: same folder text, new file name.
	if i := strings.LastIndexAny(current, `/\`); i >= 0 {
		return current[:i+1] + filepath.Base(best)
	}
	return filepath.Base(best)
}

// findModel is the text model for the encoder's vocabulary: the model the
// engine's args name, else a vocabulary stub or first shard in the models
// folders.
func (p *planner) findModel(c *Config) string {
	for i, a := range c.Args {
		if strings.HasSuffix(strings.ToLower(a), ".gguf") && !isMMProj(a) && statFile(c.resolve(a)) == nil {
			return a
		}
		_ = i
	}
	var stub, shard, any string
	for _, d := range p.modelDirs() {
		for _, f := range ggufs(d, 3) {
			b := strings.ToLower(filepath.Base(f))
			switch {
			case isMMProj(f):
			case strings.Contains(b, "vocab") && stub == "":
				stub = f
			case strings.Contains(b, "00001-of-") && shard == "":
				shard = f
			case any == "":
				any = f
			}
		}
	}
	for _, f := range []string{stub, shard, any} {
		if f != "" {
			return f
		}
	}
	return ""
}
