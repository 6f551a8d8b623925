//go:build linux

package portowner

import (
	"net"
	"os"
	"strings"
	"testing"
)

// A port this test process listens on is named with its pid and command line.
func TestFindNamesThisProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	o, ok := Find(port)
	if !ok || o.PID != os.Getpid() || !strings.Contains(o.Cmdline, "portowner") {
		t.Fatalf("Find(%d) = %+v, %v; want this process %d", port, o, ok, os.Getpid())
	}
	l.Close()
	if o, ok := Find(port); ok {
		t.Errorf("a closed port still has an owner: %+v", o)
	}
}

// The control API tells its callers apart by account: the peer of a
// loopback connection is this process's uid, and another account's
// connection is that account's.
func TestPeerUID(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	uid, ok := PeerUID(s.LocalAddr(), s.RemoteAddr())
	if !ok || uid != uint32(os.Getuid()) {
		t.Fatalf("PeerUID = %d %v, want this process's %d", uid, ok, os.Getuid())
	}
	if uid, ok := procUID(s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)); !ok || uid != uint32(os.Getuid()) {
		t.Fatalf("from /proc: %d %v", uid, ok)
	}
}
