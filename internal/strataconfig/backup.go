package strataconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/fserr"
)

// KeepBackups is how many of its own timestamped backups the companion keeps
// per config. Strata's own `.bak` is never deleted.
const KeepBackups = 5

// writeFile replaces a file atomically. A test swaps it to die between
// writing the temporary file and renaming it.
// check (nil for backups) runs right before the rename.
var writeFile = writeAsOwner

// ErrChangedOnDisk says the config changed on disk since the change was
// planned (a person or another program wrote it): nothing was written.
var ErrChangedOnDisk = errors.New("the Strata config changed on disk")

// ChangedError is ErrChangedOnDisk with the file and the moment it was seen.
type ChangedError struct {
	Path string
	// AtRename: the change was seen right before the rename (after the
	// plan was checked once already).
	AtRename bool
}

func (e *ChangedError) Error() string {
	when := "since this change was planned"
	if e.AtRename {
		when = "while the companion was about to save it"
	}
	return fmt.Sprintf("%s was changed by another program or a person %s; nothing was written and that edit is kept: look at the file, then make the change again", e.Path, when)
}

func (e *ChangedError) Is(target error) bool { return target == ErrChangedOnDisk }

// now is the clock for backup names (tests pin it).
var now = time.Now

const stampLayout = "20060102T150405Z"

// backup is one backup of a config: ours (`<config>.bak-<UTC stamp>[-n]`) or
// Strata's own (`<config>.bak`).
type backup struct {
	path   string
	when   time.Time
	seq    int  // the -n suffix of two backups in one second
	strata bool // Strata's own .bak
}

// listBackups returns the backups of configPath, newest first.
func listBackups(configPath string) []backup {
	dir, base := filepath.Dir(configPath), filepath.Base(configPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []backup
	for _, e := range entries {
		name := e.Name()
		// A backup is a plain file the companion (or Strata) wrote: a link
		// or anything else by that name is not one (a root service would
		// read through it what the owner may not).
		if !e.Type().IsRegular() || !strings.HasPrefix(name, base+".bak") {
			continue
		}
		rest := strings.TrimPrefix(name, base+".bak")
		full := filepath.Join(dir, name)
		if rest == "" {
			if info, err := e.Info(); err == nil {
				out = append(out, backup{path: full, when: info.ModTime(), strata: true})
			}
			continue
		}
		if !strings.HasPrefix(rest, "-") {
			continue
		}
		stamp, seqText, _ := strings.Cut(rest[1:], "-")
		t, err := time.Parse(stampLayout, stamp)
		if err != nil {
			continue
		}
		seq := 1
		if seqText != "" {
			if seq, err = strconv.Atoi(seqText); err != nil {
				continue
			}
		}
		out = append(out, backup{path: full, when: t, seq: seq})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].when.Equal(out[j].when) {
			return out[i].when.After(out[j].when)
		}
		return out[i].seq > out[j].seq
	})
	return out
}

// Backups lists the backups of configPath, newest first (for the CLI and the
// wizard to show).
func Backups(configPath string) []string {
	var out []string
	for _, b := range listBackups(configPath) {
		out = append(out, b.path)
	}
	return out
}

// writeBackup saves data as a new timestamped backup of configPath and drops
// the oldest of ours beyond KeepBackups.
func writeBackup(configPath string, data []byte, mode os.FileMode) (string, error) {
	stamp := now().UTC().Truncate(time.Second)
	// Never older than an existing backup (a clock set back must not make
	// the newest backup look old), and after the last one of the same
	// second: names sort in the order the backups were made, even after
	// older ones were pruned.
	seq := 1
	for _, b := range listBackups(configPath) {
		if b.strata {
			continue
		}
		if b.when.After(stamp) {
			stamp, seq = b.when, b.seq+1
		} else if b.when.Equal(stamp) && b.seq >= seq {
			seq = b.seq + 1
		}
	}
	name := configPath + ".bak-" + stamp.Format(stampLayout)
	if seq > 1 {
		name = fmt.Sprintf("%s-%d", name, seq)
	}
	for ; ; seq++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.bak-%s-%d", configPath, stamp.Format(stampLayout), seq+1)
	}
	if err := writeFile(name, data, mode, nil); err != nil {
		return "", fmt.Errorf("backing up %s: %w (nothing was changed)", configPath, fserr.Explain(err, name))
	}
	var ours []backup
	for _, b := range listBackups(configPath) {
		if !b.strata {
			ours = append(ours, b)
		}
	}
	for i := KeepBackups; i < len(ours); i++ {
		_ = os.Remove(ours[i].path)
	}
	return name, nil
}

// refuseReadOnly refuses a config whose owner may not write it (mode 0444,
// or Windows' Read-only attribute): someone made it read-only on purpose,
// and a rename would replace it anyway (the folder is writable), keeping the
// 0444 mode with new content.
func refuseReadOnly(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o200 != 0 {
		return nil
	}
	fix := "chmod u+w " + path
	if runtime.GOOS == "windows" {
		fix = "clear its Read-only box in Properties, or run: attrib -r \"" + path + "\""
	}
	return fmt.Errorf("%s is read-only (mode %04o), so it was left as it is; nothing was changed. If the companion may change it, make it writable (%s) and try again", path, st.Mode().Perm(), fix)
}

func fileMode(path string) os.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return 0o644
}

// Apply backs the current file up and writes the new text atomically. It
// refuses when the file changed since the plan was made (another program
// wrote it). Nothing changes (and no backup is made) for an empty change.
func (c *Change) Apply() (backup string, err error) {
	cur, err := ReadFile(c.Path)
	if err != nil {
		return "", fmt.Errorf("reading %s again before writing: %w", c.Path, err)
	}
	if !bytes.Equal(cur, c.Old) {
		return "", &ChangedError{Path: c.Path}
	}
	if !c.Changed() {
		return "", nil
	}
	if err := refuseReadOnly(c.Path); err != nil {
		return "", err
	}
	mode := fileMode(c.Path)
	if backup, err = writeBackup(c.Path, c.Old, mode); err != nil {
		return "", err
	}
	// Re-read the file right before the rename: an edit made since the
	// check above is refused, not overwritten (the backup made above holds
	// what was on disk, which is then still the file itself).
	recheck := func() error {
		now, err := ReadFile(c.Path)
		if err != nil {
			return fmt.Errorf("reading %s again before replacing it: %w", c.Path, err)
		}
		if !bytes.Equal(now, c.Old) {
			return &ChangedError{Path: c.Path, AtRename: true}
		}
		return nil
	}
	if err := writeFile(c.Path, c.New, mode, recheck); err != nil {
		if errors.Is(err, ErrChangedOnDisk) {
			return "", err
		}
		return backup, fmt.Errorf("writing %s: %w; the old file is unchanged (backup: %s)", c.Path, fserr.Explain(err, c.Path), backup)
	}
	return backup, nil
}

// PlanRestore plans putting back the newest backup (ours or Strata's
// `.bak`) that is a valid config and differs from the file; it writes
// nothing. Applying it backs the current file up first, so restoring twice
// undoes the first restore.
func PlanRestore(configPath string) (ch *Change, from string, err error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, "", err
	}
	abs = RealPath(abs)
	cur, err := ReadFile(abs)
	if err != nil {
		return nil, "", fmt.Errorf("reading the Strata config: %w", err)
	}
	if err := refuseReadOnly(abs); err != nil {
		return nil, "", err
	}
	var skipped []string
	for _, b := range listBackups(abs) {
		data, rerr := ReadFile(b.path)
		if rerr != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", filepath.Base(b.path), rerr))
			continue
		}
		if bytes.Equal(data, cur) {
			continue
		}
		if _, perr := fromBytes(abs, data); perr != nil {
			skipped = append(skipped, fmt.Sprintf("%s (not a valid config)", filepath.Base(b.path)))
			continue
		}
		return &Change{Path: abs, Old: cur, New: data, Notes: []string{"putting back " + b.path}}, b.path, nil
	}
	msg := fmt.Sprintf("no backup of %s to restore", abs)
	if len(skipped) > 0 {
		msg += " (unusable: " + strings.Join(skipped, ", ") + ")"
	}
	return nil, "", errors.New(msg + "; a backup is made each time the companion changes it")
}

// Restore puts the newest backup back (see PlanRestore), atomically.
func Restore(configPath string) (restoredFrom string, err error) {
	ch, from, err := PlanRestore(configPath)
	if err != nil {
		return "", err
	}
	if _, err := ch.Apply(); err != nil {
		return "", err
	}
	return from, nil
}
