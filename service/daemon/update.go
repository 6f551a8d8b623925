package daemon

import (
	"context"

	"github.com/strata-companion/companion/internal/controlapi"
)

// UpdateStrata is POST /v1/strata/update.
func (d *Daemon) UpdateStrata(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error) {
	return nil, conflict("not yet")
}
