package stratainstall

import (
	"path/filepath"

	"github.com/strata-companion/companion/internal/asowner"
)

// readScript reads a run script of the install with the install owner's
// rights (asowner): no link of the owner's followed, no FIFO waited on, at
// most 1 MiB.
func readScript(script string) ([]byte, error) {
	return asowner.ReadFileIn(filepath.Dir(script), script, 1<<20)
}
