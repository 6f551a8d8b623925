//go:build !linux

package portowner

// listeners is not implemented here: the service then names the port only.
func listeners(int) []Owner { return nil }

func listenerUIDs(int) []int { return nil }
