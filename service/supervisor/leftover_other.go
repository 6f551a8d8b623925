//go:build !linux

package supervisor

// Without /proc the pid file is not checked: on Windows the job object ends
// with the service's handle, so nothing is left behind to find.
func procStart(int) (uint64, bool)         { return 0, false }
func groupSince(int, uint64, string) []int { return nil }
func endGroup(int, bool)                   {}
