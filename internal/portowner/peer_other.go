//go:build !linux

package portowner

import "net"

// PeerUID is not told here: the control API then counts all callers as one.
func PeerUID(local, remote net.Addr) (uint32, bool) { return 0, false }
