package cli

import (
	"fmt"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/service/supervisor"
)

// sayServerAccount tells the installing administrator which account will
// run Strata's server from root (docs/security.md), or why the service
// will refuse to run it, before the service is installed.
func sayServerAccount(env *cliEnv, root, serviceUser string) {
	if root == "" {
		return
	}
	if serviceUser != "" {
		fmt.Fprintf(env.stdout, "Strata will run as %s, the service's account.\n", serviceUser)
		return
	}
	a, err := account.ServerAccount(root, supervisor.VenvPython(root))
	switch {
	case err != nil:
		fmt.Fprintf(env.stderr, "strata-service install: %v\n", err)
	case a != nil:
		fmt.Fprintf(env.stdout, "Strata will run as %s, the owner of %s (never with the service's administrator rights).\n", a, root)
	default:
		own, oerr := account.OwnerOf(root)
		me, merr := account.Current()
		if oerr == nil && merr == nil && own.Name == me.Name && !me.Privileged {
			fmt.Fprintf(env.stdout, "Strata will run as %s, the owner of %s and the service's own account.\n", own, root)
			return
		}
		fmt.Fprintf(env.stdout, "Strata will run with the service's rights: only administrators can change %s.\n", root)
	}
}
