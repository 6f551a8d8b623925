// Command lendstandin plays strata-service.exe for the installer's lend
// role under wine (installer's TestLendRoleUnderWine), where the real
// lend would set up an ssh server and announce this machine on its own
// network: it records each command line in
// %ProgramData%\StrataCompanion\standin.log, and plays `lend` (the signed-in
// user's view of lending written as the lender writes it, with the code in
// $STANDIN_CODE, valid for 10 minutes) and `lend stop` (the view removed).
// Not shipped.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/lendshown"
)

func main() {
	line := strings.Join(os.Args[1:], " ")
	fmt.Println("... stand-in strata-service " + line)
	logDir := filepath.Join(os.Getenv("ProgramData"), "StrataCompanion")
	os.MkdirAll(logDir, 0o755)
	if f, err := os.OpenFile(filepath.Join(logDir, "standin.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-service: ", err)
		os.Exit(1)
	}
	view := lendshown.File(home)
	switch line {
	case "lend":
		s := lendshown.Shown{Name: "gaming-laptop", Code: os.Getenv("STANDIN_CODE"), Expires: time.Now().Add(10 * time.Minute).Truncate(time.Second)}
		os.MkdirAll(filepath.Dir(view), 0o700)
		if err := os.WriteFile(view, s.Marshal(), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "strata-service lend: ", err)
			os.Exit(1)
		}
	case "lend stop":
		os.Remove(view)
	}
}
