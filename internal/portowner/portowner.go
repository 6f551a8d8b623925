// Package portowner names the process that listens on a local TCP port
// (pid and command line), so the service can say which program holds the
// port Strata needs instead of failing on a bare "port in use".
package portowner

import "strings"

// Owner is the process listening on a port.
type Owner struct {
	PID     int
	Cmdline string
}

// Find names the process listening on 127.0.0.1:port (or any address);
// ok is false when it cannot be told (nothing listens, or the system does
// not say).
func Find(port int) (o Owner, ok bool) { return find(port) }

// cmdline joins argv as one line for people to read.
func cmdline(argv []string) string { return strings.Join(argv, " ") }
