package account

import (
	"strings"
	"testing"
)

// The Windows access lists (wine keeps no ACLs, so they are checked as
// written): protected (nothing inherited from %ProgramData%, which lets
// Users read), SYSTEM and Administrators, and the one account named; never
// Users (BU), Everyone (WD), Authenticated Users (AU) or Interactive (IU).
func TestWindowsAccessLists(t *testing.T) {
	sid := "S-1-5-21-1004336348-1177238915-682003330-1001"
	for _, c := range []struct{ sddl, reader string }{
		{PrivateSDDL(sid), "(A;;FR;;;" + sid + ")"},
		{PrivateSDDL(""), ""},
		{LockSDDL, "(A;;FA;;;OW)"},
	} {
		if !strings.HasPrefix(c.sddl, "D:P(A;;FA;;;SY)(A;;FA;;;BA)") || strings.TrimPrefix(c.sddl, "D:P(A;;FA;;;SY)(A;;FA;;;BA)") != c.reader {
			t.Errorf("%s: want SYSTEM, Administrators and %q only, protected", c.sddl, c.reader)
		}
		for _, who := range []string{";BU)", ";WD)", ";AU)", ";IU)"} {
			if strings.Contains(c.sddl, who) {
				t.Errorf("%s admits %s", c.sddl, who)
			}
		}
	}
}
