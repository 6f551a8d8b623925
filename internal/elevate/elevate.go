// Package elevate runs strata-service with an administrator's rights and
// waits for it: Windows asks with its UAC prompt (ShellExecuteExW's
// "runas", through a hidden cmd.exe whose output lands in a file of this
// user's, since an elevated program's output cannot be piped back), Linux
// with pkexec (polkit's prompt); where neither can ask, the error says what
// to run by hand. The tray (lending's new code and Stop lending) and the
// setup window (lending this PC's GPU) both run lend this way.
package elevate

import (
	"context"
	"errors"
	"strings"
)

// ErrDeclined is Run's answer when the user declined the administrator
// prompt: nothing ran.
var ErrDeclined = errors.New("the administrator prompt was declined")

// Run runs exe (strata-service, by its full path) with args with an
// administrator's rights and waits for it or for ctx. A failure comes back
// in strata-service's own words (its error line, without the prefix).
func Run(ctx context.Context, exe string, args ...string) error { return run(ctx, exe, args) }

// serviceError is what strata-service said went wrong, from its output:
// its last "strata-service ...: why" and what follows, without the prefix
// ("" when it said nothing).
func serviceError(out []byte) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n")), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "strata-service") {
			msg := strings.Join(lines[i:], " ")
			if j := strings.Index(msg, ": "); j >= 0 {
				msg = msg[j+2:]
			}
			return strings.TrimSpace(msg)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}
