package testenv

import (
	"net"
	"testing"
)

// SilentPort listens on loopback, accepts every connection and never says a
// word (a hung sshd, a tarpit, a wrong service) until t ends; it returns
// the address.
func SilentPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("silent port: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, silent, until the test ends
		}
	}()
	return l.Addr().String()
}
