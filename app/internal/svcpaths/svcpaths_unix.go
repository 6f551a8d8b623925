//go:build !windows && !darwin

package svcpaths

// systemDirs are internal/locations' folders for a root service on Linux.
func systemDirs() *dirs {
	return &dirs{state: "/var/lib/strata-companion", config: "/etc/strata-companion"}
}
