package daemon

// The running Strata's version: what its engine reports (/v1/status
// "engine", read once it is ready), else the install's engine/BUILD.json.

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// Build is engine/BUILD.json: the installed engine's version and source.
type Build struct {
	Version string `json:"version"`
	Source  string `json:"source,omitempty"` // prebuilt or local
}

// ReadBuild reads root's engine/BUILD.json (zero when missing).
func ReadBuild(root string) Build {
	var b Build
	// Read with the install owner's rights only (no link followed, bounded).
	data, err := asowner.ReadFileIn(root, filepath.Join(root, "engine", "BUILD.json"), asowner.SmallLimit)
	if err == nil {
		_ = json.Unmarshal(data, &b)
	}
	return b
}

// runningVersion asks the server on port for its engine's version.
func runningVersion(ctx context.Context, port int, apiKey string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/v1/status", nil)
	if err != nil {
		return ""
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st struct {
		Engine any `json:"engine"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return ""
	}
	switch v := st.Engine.(type) {
	case string:
		return v
	case map[string]any: // a newer Strata may describe it as an object
		if s, ok := v["version"].(string); ok {
			return s
		}
	}
	return ""
}

// addVersion puts the running Strata's version into its server.ready event.
func (d *Daemon) addVersion(r *running, e *events.Event) {
	if r.in == nil {
		return
	}
	b := ReadBuild(r.in.Root)
	ver, key := "", ""
	if c, err := strataconfig.Read(r.path()); err == nil {
		key = c.APIKey()
	}
	port := d.port(r.in)
	det := events.Get[events.ServerReadyDetails](*e)
	if det.Port > 0 {
		port = det.Port
	}
	ver = runningVersion(context.Background(), port, key)
	if ver == "" {
		ver = b.Version
	}
	det.Version, det.Engine = ver, b.Source
	e.Details = events.ToMap(det)
}
