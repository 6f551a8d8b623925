//go:build linux

package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Netns is a "second PC" for link tests: a network namespace joined to this
// one by a veth pair with private addresses, optionally behind a tbf rate
// limit on both ends. Start sshd in it with SSHDOptions{Netns: n.Name,
// ListenHost: n.PeerAddr} and dial n.PeerAddr from the test.
type Netns struct {
	Name     string // the namespace ("strata-<pid>-<n>")
	HostAddr string // this side of the veth pair (e.g. 10.213.7.1)
	PeerAddr string // the namespace's side (e.g. 10.213.7.2)

	hostDev, peerDev string
}

// NetnsOptions shapes the link.
type NetnsOptions struct {
	// RateMbit limits each direction with tbf (0: no limit). This kernel has
	// no netem: add latency with StartDelayProxy.
	RateMbit int
}

// netnsPrefix names every namespace these helpers make, so a later test can
// remove the ones a killed test process left behind.
const netnsPrefix = "strata-"

// NewNetns makes the namespace and removes it when t ends. It needs root
// and iproute2 (ip, tc); without them it skips (fails under strict mode).
func NewNetns(t testing.TB, opts NetnsOptions) *Netns {
	t.Helper()
	Root(t)
	LookPath(t, "ip", "tc")

	// Two tests (or two engineers' test binaries) may make namespaces at
	// once: pick the subnet and names under a machine-wide lock.
	unlock := lockFile(t, filepath.Join(os.TempDir(), "strata-netns.lock"))
	defer unlock()
	removeStaleNetns()

	subnet, err := freeSubnet()
	if err != nil {
		Skip(t, err.Error())
	}
	pid := os.Getpid()
	n := &Netns{
		Name:     fmt.Sprintf("%s%d-%d", netnsPrefix, pid, subnet),
		HostAddr: fmt.Sprintf("10.213.%d.1", subnet),
		PeerAddr: fmt.Sprintf("10.213.%d.2", subnet),
		// Interface names are at most 15 bytes.
		hostDev: fmt.Sprintf("st%dh", subnet),
		peerDev: fmt.Sprintf("st%dp", subnet),
	}
	t.Cleanup(n.remove)
	steps := [][]string{
		{"ip", "netns", "add", n.Name},
		{"ip", "link", "add", n.hostDev, "type", "veth", "peer", "name", n.peerDev},
		{"ip", "link", "set", n.peerDev, "netns", n.Name},
		{"ip", "addr", "add", n.HostAddr + "/24", "dev", n.hostDev},
		{"ip", "link", "set", n.hostDev, "up"},
		{"ip", "-n", n.Name, "addr", "add", n.PeerAddr + "/24", "dev", n.peerDev},
		{"ip", "-n", n.Name, "link", "set", n.peerDev, "up"},
		{"ip", "-n", n.Name, "link", "set", "lo", "up"},
	}
	if opts.RateMbit > 0 {
		// tbf needs a bucket of at least one timer tick's worth of bytes
		// (rate/HZ) or it cannot reach the rate; 64 KiB is plenty up to
		// ~100 Mbit, scale above that.
		burst := opts.RateMbit * 1000 * 1000 / 8 / 100
		if burst < 64*1024 {
			burst = 64 * 1024
		}
		tbf := []string{"root", "tbf", "rate", strconv.Itoa(opts.RateMbit) + "mbit",
			"burst", strconv.Itoa(burst), "latency", "50ms"}
		steps = append(steps,
			append([]string{"tc", "qdisc", "add", "dev", n.hostDev}, tbf...),
			append([]string{"ip", "netns", "exec", n.Name, "tc", "qdisc", "add", "dev", n.peerDev}, tbf...))
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			// A container without CAP_SYS_ADMIN / CAP_NET_ADMIN cannot do this.
			Skip(t, fmt.Sprintf("cannot set up a network namespace (%s: %v: %s)", strings.Join(s, " "), err, strings.TrimSpace(string(out))))
		}
	}
	return n
}

// Command is a command that runs inside the namespace.
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

func (n *Netns) remove() {
	// Deleting the namespace destroys its end of the veth pair, which
	// takes the host end with it; delete the host end too in case the
	// namespace was never made.
	exec.Command("ip", "netns", "del", n.Name).Run()
	exec.Command("ip", "link", "del", n.hostDev).Run()
}

// freeSubnet picks x for 10.213.x.0/24 not used by any interface here.
func freeSubnet() (int, error) {
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("ip addr show: %v", err)
	}
	used := string(out)
	start := os.Getpid() % 200
	for i := 0; i < 250; i++ {
		x := 1 + (start+i)%250
		if !strings.Contains(used, fmt.Sprintf(" 10.213.%d.", x)) {
			return x, nil
		}
	}
	return 0, fmt.Errorf("no free 10.213.x.0/24 subnet for a test namespace")
}

// removeStaleNetns deletes namespaces made by test processes that no longer
// run (a test killed by a timeout never reaches its cleanup).
func removeStaleNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], netnsPrefix) {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(f[0], netnsPrefix), "-")
		if len(parts) != 2 {
			continue
		}
		pid, err := strconv.Atoi(parts[0])
		if err != nil || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue
		}
		exec.Command("ip", "netns", "del", f[0]).Run()
		exec.Command("ip", "link", "del", "st"+parts[1]+"h").Run()
	}
}

// lockFile takes an exclusive flock on path; the returned func releases it.
func lockFile(t testing.TB, path string) func() {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// CutLink takes the namespace's side of the veth down: packets to it are
// dropped without a word (a black hole: a cable pulled, a PC frozen), and
// the host keeps its route, so nothing leaves the machine.
func (n *Netns) CutLink() error {
	return exec.Command("ip", "-n", n.Name, "link", "set", n.peerDev, "down").Run()
}

// RestoreLink brings the namespace's side of the veth up again.
func (n *Netns) RestoreLink() error {
	return exec.Command("ip", "-n", n.Name, "link", "set", n.peerDev, "up").Run()
}
