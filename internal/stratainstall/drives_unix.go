//go:build !windows

package stratainstall

// driveRoots: other systems have no drive letters; /opt is where a system
// install would go.
func driveRoots() []string { return []string{"/opt"} }
