// Package svcpaths answers where the tray finds the service's control
// address and token: its own folders first (a per-user service, or
// STRATA_COMPANION_HOME), then a system service's. The answer itself lives in internal/locations, shared
// with the wizard and the CLI; this package keeps the tray's names for it.
package svcpaths

import "github.com/strata-companion/companion/internal/locations"

// StateDirs lists the folders that may hold control-addr and control-token,
// best first.
func StateDirs() []string { return locations.ServiceStateDirs() }
