//go:build !linux

package portowner

// find is not implemented here: the service then names the port only.
func find(int) (Owner, bool) { return Owner{}, false }
