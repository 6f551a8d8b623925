package backend

// Putting back the config's top-level keys Strata's setup dropped or
// changed (host, api_key, port, any other the companion knew), from a
// backup of the config: the repair after `setup.py --setup`. The one writer
// of the config does it, under the same lock and with a backup, as every
// other change.

import (
	"context"
	"errors"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// KeysResult is what RestoreKeys did (or would do, for a dry run).
type KeysResult struct {
	Diff          string
	ConfigWritten bool
	Backup        string
}

// RestoreKeys puts keys back into the config as want has them (their JSON
// text, from the backup named from). A dry run writes nothing and takes no
// cross-process lock.
func (b *Backend) RestoreKeys(ctx context.Context, want map[string]string, keys []string, from string, dryRun bool) (*KeysResult, error) {
	if len(keys) == 0 {
		return &KeysResult{}, nil
	}
	unlock, err := b.lockFor(ctx, dryRun)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ch, err := strataconfig.PlanKeys(b.o.ConfigPath, want, keys, from)
	if err != nil {
		return nil, asRequest(err)
	}
	res := &KeysResult{Diff: ch.Diff()}
	if dryRun || !ch.Changed() {
		return res, nil
	}
	backup, err := ch.Apply()
	if err != nil {
		if errors.Is(err, strataconfig.ErrChangedOnDisk) {
			return nil, &ConflictError{err}
		}
		return nil, explain(err, b.o.ConfigPath)
	}
	res.ConfigWritten, res.Backup = true, backup
	b.publish(events.Event{Kind: events.ConfigChanged, Message: "keys Strata's setup dropped were put back",
		Details: map[string]any{"path": b.o.ConfigPath, "backup": backup, "config_written": true, "restart_needed": true, "keys": keys}})
	return res, nil
}
