package supervisor

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-companion/companion/internal/strataconfig"
)

// loads is what Strata's server will execute or load because of its
// config, besides the install's own serve/, engine/ and venv: the config
// itself, the engine and encoder programs it names, its cwd, and every
// absolute path in its env's values (LD_PRELOAD, LD_LIBRARY_PATH,
// PYTHONPATH, PYTHONHOME, PATH...). The account that runs Strata is decided
// from all of them (account.ServerAccount).
func loads(configPath string, sc *strataconfig.Config) []string {
	out := []string{configPath}
	if sc == nil {
		return out
	}
	out = append(out, sc.Resolve(sc.Exe))
	if sc.Cwd != "" {
		out = append(out, sc.Resolve(sc.Cwd))
	}
	if sc.Vision != nil {
		out = append(out, sc.Resolve(sc.Vision.Exe))
	}
	for _, v := range sc.Env {
		for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == os.PathListSeparator || r == ' ' || r == '\t' }) {
			if filepath.IsAbs(part) {
				out = append(out, part)
			}
		}
	}
	return out
}
