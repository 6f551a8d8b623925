package main

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

// reportNEmbd hands an n_embd the second PC's encoder reported to the
// settings' owner (the service, POST /v1/relay): the relay reads the
// settings but never writes them.
func reportNEmbd(ctx context.Context, n int) error {
	c, err := controlapi.NewClient()
	if err != nil {
		return fmt.Errorf("no Strata Companion service to record it in the settings: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.ReportRelay(rctx, controlapi.RelayReport{NEmbd: n})
}
