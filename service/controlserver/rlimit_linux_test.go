package controlserver

import (
	"syscall"
	"testing"
)

// Issue 32: the flood ran the service out of descriptors at the soft
// limit. RaiseFDLimit takes the soft limit to the hard one (and root's hard
// one to the kernel's ceiling, at most a million).
func TestRaiseFDLimit(t *testing.T) {
	n, err := RaiseFDLimit()
	if err != nil {
		t.Fatal(err)
	}
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	if rl.Cur != rl.Max || n != rl.Cur {
		t.Fatalf("after RaiseFDLimit: soft %d hard %d (returned %d), want soft = hard", rl.Cur, rl.Max, n)
	}
	t.Logf("descriptor limit now %d", rl.Cur)
}
