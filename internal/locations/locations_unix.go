//go:build !windows && !darwin

package locations

import (
	"os"
	"path/filepath"
)

// On Linux the settings (ConfigDir) and the service's state (StateDir) have
// one place per machine, whoever runs the program: /etc/strata-companion and
// /var/lib/strata-companion. A normal user's tray, wizard and CLI read them
// there and change them by asking the service (which writes them as root).
// A per-user install without root sets STRATA_COMPANION_HOME instead.
// Secrets and logs of a program run by a normal user stay in that user's
// XDG folders (they are that program's own).
func osPath(k Kind) string {
	if os.Geteuid() == 0 || k == ConfigDir || k == StateDir {
		return systemPath(k)
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

// systemPath is where a system service (root) keeps k.
func systemPath(k Kind) string {
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

// servicePaths: a normal user's own folders first (a per-user service), then
// the system service's, which the tray and the wizard must find too.
func servicePaths(k Kind) []string {
	own := Path(k)
	if os.Getenv(EnvHome) != "" || os.Geteuid() == 0 || systemPath(k) == own {
		return []string{own}
	}
	return []string{own, systemPath(k)}
}
