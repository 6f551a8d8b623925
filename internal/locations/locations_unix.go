//go:build !windows && !darwin

package locations

import (
	"os"
	"path/filepath"
)

// On Linux a system service (root) uses the FHS folders; a user service (not
// root) uses the XDG folders of that user.
func osPath(k Kind) string {
	if os.Geteuid() == 0 {
		switch k {
		case SecretsDir:
			return "/etc/strata-companion/secrets"
		case LogDir:
			return "/var/log/strata-companion"
		case StateDir:
			return "/var/lib/strata-companion"
		default:
			return "/etc/strata-companion"
		}
	}
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		home, _ := os.UserHomeDir()
		cfg = filepath.Join(home, ".config")
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, _ := os.UserHomeDir()
		state = filepath.Join(home, ".local", "state")
	}
	switch k {
	case SecretsDir:
		return filepath.Join(cfg, "strata-companion", "secrets")
	case LogDir:
		return filepath.Join(state, "strata-companion", "logs")
	case StateDir:
		return filepath.Join(state, "strata-companion")
	default:
		return filepath.Join(cfg, "strata-companion")
	}
}
