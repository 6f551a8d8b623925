package stratatmp

import "os"

// ownedBy is true on Windows: each account's %TEMP% is its own (the
// folder's ACL keeps other accounts out), so what is in it is the
// account's.
func ownedBy(os.FileInfo, int) bool { return true }
