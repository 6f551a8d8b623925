package backend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// What a config is, as GET /v1/configs lists it: the service's list and
// the in-process owner's (no service) read each file the same way.

// ConfigTag is a config's tag: strata-<tag>.json.
func ConfigTag(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(strings.TrimPrefix(b, "strata-"), ".json")
}

// ConfigFile turns a tag or a path into the config's absolute path under root.
func ConfigFile(root, config string) string {
	if strings.ContainsAny(config, `/\`) || strings.HasSuffix(config, ".json") {
		if !filepath.IsAbs(config) {
			if _, err := os.Stat(config); err != nil && root != "" {
				config = filepath.Join(root, config)
			}
		}
		abs, _ := filepath.Abs(config)
		return abs
	}
	return filepath.Join(root, "strata-"+config+".json")
}

// ConfigEntry describes one config: its model and whether it can run as it is.
func ConfigEntry(in *stratainstall.Install, path string) controlapi.ConfigEntry {
	e := controlapi.ConfigEntry{Path: path, Tag: ConfigTag(path)}
	c, err := strataconfig.Read(path)
	if err != nil {
		e.Problem = err.Error()
		return e
	}
	var keys struct {
		ModelName string `json:"model_name"`
	}
	_ = json.Unmarshal(c.Raw, &keys)
	e.ModelName = keys.ModelName
	switch {
	case c.Err() != nil:
		e.Problem = c.Problems[0].String()
	case in != nil && in.Python == "":
		e.Problem = "Strata's Python (.venv) is missing in " + in.Root + ": run Strata's setup first"
	default:
		if m := missingModel(c); m != "" {
			e.Problem = "the model file " + m + " does not exist: download it with Strata's setup"
		}
	}
	e.Ready = e.Problem == ""
	return e
}

// missingModel is the first model file the engine's arguments name that
// does not exist ("" when all do).
func missingModel(c *strataconfig.Config) string {
	for i, a := range c.Args {
		switch a {
		case "-m", "--model", "--native", "--pack":
			if i+1 < len(c.Args) {
				p := c.Resolve(c.Args[i+1])
				if _, err := os.Stat(p); err != nil {
					return p
				}
			}
		}
	}
	return ""
}
