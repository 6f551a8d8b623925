package supervisor

import (
	"os"
	"os/exec"

	"golang.org/x/sys/windows"

	"github.com/strata-companion/companion/internal/account"
)

// runAs starts cmd as a, with the token of a's signed-in session moved
// into the service's session (account.Token) and a's own environment (nil:
// as this process); the returned func closes the token once the process is
// started. Windows lends a service (SYSTEM) the token
// of a signed-in user only: while a is not signed in this fails, saying so.
// The note, when not "", is for the server's log: the token may not lock
// memory yet (account.LockMemory grants the right, which applies from a's
// next sign-in).
func runAs(cmd *exec.Cmd, a *account.Account) (func(), string, error) {
	if a == nil {
		return func() {}, "", nil
	}
	tok, err := a.Token()
	if err != nil {
		return nil, "", err
	}
	note, err := account.LockMemory(windows.Token(tok), a)
	if err != nil {
		note = err.Error() // Strata still runs, without locked memory
	}
	cmd.SysProcAttr.Token = tok
	// a's own environment (profile, TEMP), then what the supervisor added
	// after the service's (Config.Env, PYTHONUNBUFFERED, the mark).
	if env, err := windows.Token(tok).Environ(false); err == nil {
		if n := len(os.Environ()); n <= len(cmd.Env) {
			cmd.Env = append(env, cmd.Env[n:]...)
		}
	}
	return func() { tok.Close() }, note, nil
}
