package stratainstall

import "os"

// driveRoots are the Windows drive roots that exist (C:\ to Z:\), where
// people unpack Strata as C:\Strata or D:\strata.
func driveRoots() []string {
	var out []string
	for c := 'C'; c <= 'Z'; c++ {
		root := string(c) + `:\`
		if _, err := os.Stat(root); err == nil {
			out = append(out, root)
		}
	}
	return out
}
