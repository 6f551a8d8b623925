// Package svcpaths answers where the tray finds the service's files. The
// tray runs as the logged-in user, but a system service (root on Linux)
// keeps its state and settings in the machine-wide folders that
// internal/locations gives root; internal/locations gives a normal user the
// XDG folders of a per-user service. So the tray looks in its own folders
// first (a per-user service, or STRATA_COMPANION_HOME) and then in the
// system service's. Keep systemDirs in step with locations_unix.go's root
// branch (the integrator may move this into internal/locations).
package svcpaths

import (
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/locations"
)

// StateDirs lists the folders that may hold control-addr and control-token,
// best first.
func StateDirs() []string {
	dirs := []string{locations.Path(locations.StateDir)}
	if s := systemDirs(); s != nil && os.Getenv(locations.EnvHome) == "" {
		dirs = appendNew(dirs, s.state)
	}
	return dirs
}

// SettingsFiles lists the companion settings files, best first.
func SettingsFiles() []string {
	files := []string{locations.SettingsFile()}
	if s := systemDirs(); s != nil && os.Getenv(locations.EnvHome) == "" {
		files = appendNew(files, filepath.Join(s.config, "settings.json"))
	}
	return files
}

type dirs struct{ state, config string }

func appendNew(list []string, p string) []string {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}
