// Package portowner names the process that listens on a local TCP port
// (pid, command line and account), so the service can say which program
// holds the port Strata needs instead of failing on a bare "port in use",
// and can tell another account's listener from Strata's own.
package portowner

// Owner is the process listening on a port.
type Owner struct {
	PID     int // 0 when the socket's process cannot be told
	Cmdline string
	UID     int    // the socket's account (-1: not told)
	User    string // its name ("" when unknown)
}

// Account names the owner's account for people: "ann (uid 1000)".
func (o Owner) Account() string {
	if o.UID < 0 {
		return ""
	}
	if o.User != "" {
		return o.User + " (uid " + itoa(o.UID) + ")"
	}
	return "uid " + itoa(o.UID)
}

// Find names the process listening on 127.0.0.1:port (or any address);
// ok is false when it cannot be told (nothing listens, or the system does
// not say).
func Find(port int) (o Owner, ok bool) {
	all := Listeners(port)
	if len(all) == 0 {
		return Owner{}, false
	}
	for _, o := range all {
		if o.PID > 0 {
			return o, true
		}
	}
	return all[0], true
}

// Listeners are all the sockets listening on port (IPv4 and IPv6, any
// address): two programs may hold one port, 127.0.0.1 and ::1.
func Listeners(port int) []Owner { return listeners(port) }

// ListenerUIDs are the accounts of the sockets listening on port (a
// cheap look: no process is scanned).
func ListenerUIDs(port int) []int { return listenerUIDs(port) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
