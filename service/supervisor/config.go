package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// strataConfig is what the supervisor reads from strata-<tag>.json: only the
// keys that say where the server listens and logs. It never writes the file.
type strataConfig struct {
	Port   int             `json:"port"`
	Host   string          `json:"host"`
	Log    string          `json:"log"`
	APIKey string          `json:"api_key"`
	Cwd    string          `json:"cwd"`
	Vision json.RawMessage `json:"vision"`
}

func readStrataConfig(path string) (*strataConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Strata config %s: %w", path, err)
	}
	var c strataConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("the Strata config %s is not valid JSON (%v); restore its .bak or run Strata's setup again", path, err)
	}
	return &c, nil
}

// hasVision is true when the config has a vision block (not null).
func (c *strataConfig) hasVision() bool {
	return len(c.Vision) > 0 && string(c.Vision) != "null"
}

// logPath resolves the engine log named by the config: relative paths are
// taken against the config's cwd, else the Strata root (the server's
// working folder).
func (c *strataConfig) logPath(root string) string {
	if c.Log == "" {
		return ""
	}
	if filepath.IsAbs(c.Log) {
		return c.Log
	}
	base := root
	if c.Cwd != "" {
		base = c.Cwd
		if !filepath.IsAbs(base) {
			base = filepath.Join(root, base)
		}
	}
	return filepath.Join(base, c.Log)
}

// VenvPython is the Strata venv's python under root.
func VenvPython(root string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(root, ".venv", "Scripts", "python.exe")
	}
	return filepath.Join(root, ".venv", "bin", "python")
}
