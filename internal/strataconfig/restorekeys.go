package strataconfig

// Putting back top-level keys Strata's own setup dropped or changed (host,
// api_key, port and any other the companion knew), from a backup of the
// config (the companion's own or Strata's `.bak`): the repair after
// `setup.py --setup` rewrote the config. Only the named keys change; the
// rest of the file (what setup rebuilt: args, exe, the engine's paths)
// stays as setup wrote it.

import (
	"fmt"
	"path/filepath"
	"sort"
)

// TopKeys lists the config's top-level keys with their JSON text
// (secrets included: callers never show the values).
func TopKeys(raw []byte) (map[string]string, error) {
	d, err := parse(raw)
	if err != nil {
		return nil, err
	}
	if d.root == nil || d.root.kind != kObject {
		return nil, fmt.Errorf("the config is not a JSON object")
	}
	out := map[string]string{}
	for _, m := range d.root.members {
		out[m.key] = string(d.text(m.val))
	}
	return out, nil
}

// PlanKeys plans putting the named top-level keys back into the config at
// configPath as want has them (each key's JSON text; a key want lacks is
// removed). from names where want comes from, for the notes. It writes
// nothing; the result is validated as a config.
func PlanKeys(configPath string, want map[string]string, keys []string, from string) (*Change, error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, err
	}
	old, err := ReadFile(abs) // as the folder's owner, as PlanVision reads it
	if err != nil {
		return nil, fmt.Errorf("reading the Strata config: %w", err)
	}
	// Edit the file itself, not a link to it (as PlanVision).
	abs = RealPath(abs)
	keys = append([]string(nil), keys...)
	sort.Strings(keys)
	src := old
	for _, k := range keys {
		if v, ok := want[k]; ok {
			src, err = setValue(src, nil, k, v)
		} else {
			src, err = deleteMember(src, nil, k)
		}
		if err != nil {
			return nil, err
		}
	}
	if c, err := fromBytes(abs, src); err != nil {
		return nil, err
	} else if err := c.Err(); err != nil {
		return nil, fmt.Errorf("the config with %v put back from %s would not be valid: %w", keys, from, err)
	}
	return &Change{Path: abs, Old: old, New: src, Notes: []string{"keys put back from " + from}}, nil
}
