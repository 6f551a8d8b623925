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
