//go:build !linux

package lender

import (
	"context"
	"strings"

	"github.com/strata-companion/companion/internal/account"
)

// endAgents ends the programs running from the agent folder (Windows:
// through PowerShell, a step only real Windows runs; see docs/security.md).
func endAgents(ctx context.Context, o Options, _ *account.Account, dir string) int {
	if dir == "" {
		return 0
	}
	if _, err := o.Run(ctx, endAgentsStep(dir).Argv); err != nil {
		return 0
	}
	return 1
}

// endAgentsStep ends, on Windows, every process whose program is in the
// agent folder.
func endAgentsStep(dir string) Step {
	return Step{Say: "end the lent agent and its encoder now", Argv: []string{"powershell.exe", "-NoProfile", "-NonInteractive", "-Command",
		"Get-Process | Where-Object { $_.Path -like '" + strings.ReplaceAll(dir, "'", "''") + "\\*' } | Stop-Process -Force"}}
}
