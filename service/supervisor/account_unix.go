//go:build !windows

package supervisor

import (
	"os/exec"

	"github.com/strata-companion/companion/internal/account"
)

// runAs starts cmd as a (nil: as this process): its uid, its groups (the
// GPU's device groups among them) and its HOME. The limits stay the
// service's: memlock (unlimited in the unit) carries over, which is what
// lets Strata lock its expert cache as another account. The parent-death
// signal survives too (Go sets it after changing the credentials).
func runAs(cmd *exec.Cmd, a *account.Account) (func(), string, error) {
	if a == nil {
		return func() {}, "", nil
	}
	cmd.SysProcAttr.Credential = a.Credential()
	cmd.Env = append(cmd.Env, a.Env()...)
	return func() {}, "", nil
}
