// Package stratainstall finds Strata installs on this PC and the config in use.
package stratainstall

import (
	"context"
	"errors"

	"github.com/strata-companion/companion/internal/settings"
)

// Install is one Strata install folder.
type Install struct {
	Root, Python, ServerPy string
	Configs                []string
	RunScripts             []string
	ConfigInUse            string
}

// Options narrow the search.
type Options struct {
	Root, Config string
	Settings     *settings.Settings
	SearchDirs   []string
}

// Find lists the installs it can see.
func Find(ctx context.Context, opts Options) ([]Install, error) { return nil, errors.New("not implemented yet") }

// Resolve picks the one to use, or says what to do.
func Resolve(opts Options) (*Install, error) { return nil, errors.New("not implemented yet") }
