package watch

import (
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
)

// Connect makes a client from the address and token files of the running
// service, like controlapi.NewClient (the operator token when this user may
// read it, the install's owner or an administrator; else the read token),
// but also finds a system service's files when the tray runs as a normal
// user (locations.ServiceStateDirs). With no address file anywhere it returns
// controlapi.ErrNotRunning itself, unwrapped.
func Connect() (*controlapi.Client, error) {
	return controlapi.NewClientFrom(locations.ServiceStateDirs()...)
}
