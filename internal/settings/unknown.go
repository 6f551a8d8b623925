package settings

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// The settings keep what they do not know: a newer companion's keys, at any
// depth, survive an older one's edit. Each struct of the file (Settings,
// Remote, Wake, RemoteGPU) has an Extra map; its UnmarshalJSON puts there every key no
// field of the struct takes, and its MarshalJSON writes them back beside
// the fields. Which keys a struct knows is read from its json tags
// (knownKeys), so there is no list to keep in step with the fields.

func (s *Settings) UnmarshalJSON(b []byte) error {
	type plain Settings // no methods: the default decoding
	return decodeKeeping(b, (*plain)(s), &s.Extra)
}

func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	return encodeKeeping(plain(s), s.Extra)
}

func (r *Remote) UnmarshalJSON(b []byte) error {
	type plain Remote
	return decodeKeeping(b, (*plain)(r), &r.Extra)
}

func (r Remote) MarshalJSON() ([]byte, error) {
	type plain Remote
	return encodeKeeping(plain(r), r.Extra)
}

func (w *Wake) UnmarshalJSON(b []byte) error {
	type plain Wake
	return decodeKeeping(b, (*plain)(w), &w.Extra)
}

func (w Wake) MarshalJSON() ([]byte, error) {
	type plain Wake
	return encodeKeeping(plain(w), w.Extra)
}

func (g *RemoteGPU) UnmarshalJSON(b []byte) error {
	type plain RemoteGPU
	return decodeKeeping(b, (*plain)(g), &g.Extra)
}

func (g RemoteGPU) MarshalJSON() ([]byte, error) {
	type plain RemoteGPU
	return encodeKeeping(plain(g), g.Extra)
}

// decodeKeeping decodes the object b into v (a pointer to a struct without
// methods) and the keys none of its fields takes into *extra (nil when
// there are none).
func decodeKeeping(b []byte, v any, extra *map[string]json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := knownKeys(reflect.TypeOf(v).Elem())
	for k := range all {
		// encoding/json matches a key to a field ignoring case: such a key
		// is the field's, not an unknown one.
		if known[strings.ToLower(k)] {
			delete(all, k)
		}
	}
	*extra = nil
	if len(all) > 0 {
		*extra = all
	}
	return nil
}

// encodeKeeping encodes v (a struct without methods) as an object, with
// the extra keys its fields do not write.
func encodeKeeping(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	known := knownKeys(reflect.TypeOf(v))
	for k, x := range extra {
		// A key a field owns is the field's to write (or leave out when
		// empty), never the stale copy's.
		if !known[strings.ToLower(k)] {
			m[k] = x
		}
	}
	return json.Marshal(m)
}

var knownCache sync.Map // reflect.Type -> map[string]bool

// knownKeys is the set of JSON keys t's fields take (lower case), from
// their json tags (or names), as encoding/json names them.
func knownKeys(t reflect.Type) map[string]bool {
	if k, ok := knownCache.Load(t); ok {
		return k.(map[string]bool)
	}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && f.Tag.Get("json") == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys[strings.ToLower(name)] = true
	}
	knownCache.Store(t, keys)
	return keys
}
