package cli

// Every command that changes the settings or Strata's config asks their one
// owner (internal/backend) through internal/owner, the path the wizard
// takes too: the running service through its control API, or, only when no
// service answers, the same backend hosted in this process under the same
// cross-process lock.

import (
	"context"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/secondpc"
)

// theOwner is the CLI's path to the owner.
func theOwner() owner.Owner {
	return owner.Owner{SettingsPath: locations.SettingsFile(), OnLocal: func(string) { onLocalOwner() }}
}

// openOwner is the owner the CLI talks to: internal/owner.Open's choice
// of the running service or this process.
func openOwner(ctx context.Context) controlapi.Owner { return theOwner().Open(ctx, "") }

// onLocalOwner runs when this process hosts the backend itself (no service
// answered). Tests set it to prove a running service did the writing.
var onLocalOwner = func() {}

// remoteRecorder records the second PC through its owner: the service's
// API when it runs, else the in-process backend.
func remoteRecorder(ctx context.Context) secondpc.Recorder {
	return secondpc.OwnerRecorder{Owner: openOwner(ctx)}
}
