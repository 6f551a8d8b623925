// Package locations is the one place that answers "where is X" for the
// companion on every OS: its settings, secrets, logs and state. Everything
// else asks here instead of building paths of its own.
//
// STRATA_COMPANION_HOME overrides the root on every OS (tests use it, and so
// can a portable install): everything then lives under that one folder.
//
// The service runs as another account than the user (LocalSystem on Windows,
// root on Linux), so these are machine-wide folders, never the user's home.
package locations

import (
	"os"
	"path/filepath"
)

// EnvHome overrides every location below.
const EnvHome = "STRATA_COMPANION_HOME"

// Kind names one thing the companion keeps on disk.
type Kind int

const (
	// ConfigDir holds settings.json and known_hosts.
	ConfigDir Kind = iota
	// SecretsDir holds the relay's ssh key and the control API token;
	// readable by administrators and the service only (0700 / ACL).
	SecretsDir
	// LogDir holds the supervisor's rotated log of the Strata server.
	LogDir
	// StateDir holds runtime state (the control API's address file).
	StateDir
)

// Path returns the folder for k. It does not create it; EnsureDir does.
func Path(k Kind) string {
	if h := os.Getenv(EnvHome); h != "" {
		switch k {
		case SecretsDir:
			return filepath.Join(h, "secrets")
		case LogDir:
			return filepath.Join(h, "logs")
		case StateDir:
			return filepath.Join(h, "state")
		default:
			return h
		}
	}
	return osPath(k)
}

// EnsureDir creates the folder for k with the right mode and returns it.
func EnsureDir(k Kind) (string, error) {
	p := Path(k)
	mode := os.FileMode(0o755)
	if k == SecretsDir {
		mode = 0o700
	}
	if err := os.MkdirAll(p, mode); err != nil {
		return "", err
	}
	if k == SecretsDir {
		_ = os.Chmod(p, 0o700)
	}
	return p, nil
}

// ServiceStateDirs lists the folders where a running service may have written
// its control address and token, best first. A program run by a normal user
// (the tray, the wizard, the CLI) looks in its own folders (a per-user
// service, or STRATA_COMPANION_HOME) and then in a system service's, which
// on Linux differ from the user's.
func ServiceStateDirs() []string { return servicePaths(StateDir) }

// SettingsFile is the companion's own settings (see internal/settings).
func SettingsFile() string { return filepath.Join(Path(ConfigDir), "settings.json") }

// KnownHostsFile is the companion's own known-hosts file: the second PC's
// pinned host key. Never the user's ~/.ssh/known_hosts (the service cannot
// read the user's home, and must not trust what the user trusted elsewhere).
func KnownHostsFile() string { return filepath.Join(Path(ConfigDir), "known_hosts") }

// RelayKeyFile is the companion's dedicated ed25519 key for the second PC.
func RelayKeyFile() string { return filepath.Join(Path(SecretsDir), "relay_ed25519") }

// ControlTokenFile holds the control API's bearer token.
func ControlTokenFile() string { return filepath.Join(Path(StateDir), "control-token") }

// ControlOperatorTokenFile holds the control API's operator token (full
// control): readable only by the administrators and the install's owner.
func ControlOperatorTokenFile() string {
	return filepath.Join(Path(StateDir), "control-operator-token")
}

// RelayTokenFile holds the relay's token (it may report the relay's events):
// readable only by the administrators and the account that runs Strata.
func RelayTokenFile() string { return filepath.Join(Path(StateDir), "relay-token") }

// ControlAddrFile holds the control API's listening address (host:port).
func ControlAddrFile() string { return filepath.Join(Path(StateDir), "control-addr") }

// ServerLogFile is the supervisor's log of the Strata server's output.
func ServerLogFile() string { return filepath.Join(Path(LogDir), "strata-server.log") }

// ServiceLogFile is the companion service's own log.
func ServiceLogFile() string { return filepath.Join(Path(LogDir), "strata-service.log") }
