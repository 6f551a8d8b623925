//go:build linux

package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LAN is a home network of its own for integration tests: N "PCs", each a
// network namespace with one interface (lan0) plugged by a veth pair into a
// bridge that lives in a further namespace. Nothing of it is on this
// machine's own interfaces or routes: multicast sent inside it (mDNS) stays
// inside it, and the test process cannot reach it except through a host's
// Command, Dial or Listen.
type LAN struct {
	Bridge string // the namespace holding the bridge ("strata-lan-<pid>-<x>-br")
	Hosts  []*LANHost

	subnet int
}

// LANHost is one PC on a LAN. Start sshd in it with SSHDOptions{Netns:
// h.Name, ListenHost: h.Addr} and reach it from another host's namespace
// (h.Dial, a Command).
type LANHost struct {
	Name string // its network namespace ("strata-lan-<pid>-<x>-h<i>")
	Addr string // its IPv4 address on the LAN (10.214.x.<i+1>)
	Dev  string // its interface on the LAN, inside its namespace ("lan0")

	lan    *LAN
	brPort string // the bridge's end of its veth, in the bridge namespace
}

// lanPrefix names every namespace NewLAN makes; removeStaleLANs parses it.
// netns.go's removeStaleNetns skips these names (it wants exactly
// "strata-<pid>-<n>").
const lanPrefix = netnsPrefix + "lan-"

// NewLAN makes a LAN of hosts PCs and removes it when t ends: each host has
// lo up, its address on 10.214.x.0/24 (x picked machine-wide under the same
// lock as NewNetns), and the multicast route 224.0.0.0/4 through lan0. The
// bridge forwards multicast (snooping off: every group reaches every port)
// until BlockMulticast. It needs root and iproute2 (ip, bridge); without
// them it skips (fails under strict mode).
func NewLAN(t testing.TB, hosts int) *LAN {
	t.Helper()
	Root(t)
	LookPath(t, "ip", "bridge")
	if hosts < 1 || hosts > 200 {
		t.Fatalf("NewLAN: %d hosts (1-200)", hosts)
	}

	unlock := lockFile(t, filepath.Join(os.TempDir(), "strata-netns.lock"))
	defer unlock()
	removeStaleNetns()
	removeStaleLANs()

	subnet, err := freeLANSubnet()
	if err != nil {
		Skip(t, err.Error())
	}
	base := fmt.Sprintf("%s%d-%d-", lanPrefix, os.Getpid(), subnet)
	l := &LAN{Bridge: base + "br", subnet: subnet}
	t.Cleanup(l.remove)
	steps := [][]string{
		{"ip", "netns", "add", l.Bridge},
		{"ip", "-n", l.Bridge, "link", "set", "lo", "up"},
		// STP off (the default): ports forward at once. Snooping off:
		// the bridge floods every multicast group to every port, so
		// BlockMulticast's mcast_flood off is all that stops it.
		{"ip", "-n", l.Bridge, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"},
		{"ip", "-n", l.Bridge, "link", "set", "br0", "up"},
	}
	for i := 0; i < hosts; i++ {
		h := &LANHost{
			Name:   fmt.Sprintf("%sh%d", base, i),
			Addr:   fmt.Sprintf("10.214.%d.%d", subnet, i+1),
			Dev:    "lan0",
			lan:    l,
			brPort: fmt.Sprintf("p%d", i),
		}
		l.Hosts = append(l.Hosts, h)
		steps = append(steps,
			[]string{"ip", "netns", "add", h.Name},
			// Made in the bridge's namespace with its peer put straight
			// into the host's: neither end ever exists here.
			[]string{"ip", "-n", l.Bridge, "link", "add", h.brPort, "type", "veth", "peer", "name", h.Dev, "netns", h.Name},
			[]string{"ip", "-n", l.Bridge, "link", "set", h.brPort, "master", "br0"},
			[]string{"ip", "-n", l.Bridge, "link", "set", h.brPort, "up"},
			[]string{"ip", "-n", h.Name, "link", "set", "lo", "up"},
			[]string{"ip", "-n", h.Name, "addr", "add", h.Addr + "/24", "dev", h.Dev},
			[]string{"ip", "-n", h.Name, "link", "set", h.Dev, "up"},
			[]string{"ip", "-n", h.Name, "route", "replace", "224.0.0.0/4", "dev", h.Dev},
		)
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			Skip(t, fmt.Sprintf("cannot set up a test LAN (%s: %v: %s)", strings.Join(s, " "), err, strings.TrimSpace(string(out))))
		}
	}
	return l
}

func (l *LAN) remove() {
	// A namespace's deletion destroys its ends of the veth pairs, which
	// takes the other ends with them.
	for _, h := range l.Hosts {
		exec.Command("ip", "netns", "del", h.Name).Run()
	}
	exec.Command("ip", "netns", "del", l.Bridge).Run()
}

// BlockMulticast stops the bridge from passing multicast between hosts
// (mcast_flood off on every port; with snooping off no group is forwarded
// any other way): mDNS no longer crosses, as on a guest Wi-Fi with client
// isolation for multicast. Unicast keeps working: ARP is broadcast, which
// bcast_flood still passes.
func (l *LAN) BlockMulticast() error { return l.setMcastFlood("off") }

// RestoreMulticast undoes BlockMulticast.
func (l *LAN) RestoreMulticast() error { return l.setMcastFlood("on") }

func (l *LAN) setMcastFlood(v string) error {
	for _, h := range l.Hosts {
		if out, err := exec.Command("bridge", "-n", l.Bridge, "link", "set", "dev", h.brPort, "mcast_flood", v).CombinedOutput(); err != nil {
			return fmt.Errorf("bridge link set dev %s mcast_flood %s: %v: %s", h.brPort, v, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Command is a command that runs inside the host's namespace.
func (h *LANHost) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// CutLink takes the host's side of its veth down: the host is off the LAN
// (a cable pulled, Wi-Fi gone), and the others' packets to it are dropped.
func (h *LANHost) CutLink() error {
	if out, err := exec.Command("ip", "-n", h.Name, "link", "set", h.Dev, "down").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s down in %s: %v: %s", h.Dev, h.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RestoreLink brings the host's side up again, with the multicast route the
// kernel dropped when the link went down.
func (h *LANHost) RestoreLink() error {
	for _, s := range [][]string{
		{"ip", "-n", h.Name, "link", "set", h.Dev, "up"},
		{"ip", "-n", h.Name, "route", "replace", "224.0.0.0/4", "dev", h.Dev},
	} {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Dial connects from inside the host's namespace (the socket is made there;
// the test process and its other goroutines stay where they are).
func (h *LANHost) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	return dialInNetns(h.Name, network, addr, timeout)
}

// Listen listens inside the host's namespace: a server "on that PC" that
// the test serves from its own goroutines.
func (h *LANHost) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNetns(h.Name, func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

func dialInNetns(ns, network, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := inNetns(ns, func() (err error) {
		c, err = net.DialTimeout(network, addr, timeout)
		return err
	})
	return c, err
}

// inNetns runs f on an OS thread moved into the namespace ns; a socket f
// makes belongs to ns for good. f must make its sockets itself (a dial of
// an IP literal, a listen), not in goroutines it starts: those run on other
// threads, in this process's own namespace. The thread goes back to this
// process's namespace afterwards; if it cannot, it stays locked, and the
// runtime ends it with the goroutine instead of reusing it.
func inNetns(ns string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open this thread's namespace: %v", err)
			return
		}
		defer unix.Close(back)
		fd, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open namespace %s: %v", ns, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter namespace %s: %v", ns, err)
			return
		}
		err = f()
		if unix.Setns(back, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// RootNetns is this process's own network namespace ("net:[N]", as
// /proc/self/ns/net reads), taken when the package loads, before any thread
// of it has entered another.
var RootNetns, _ = os.Readlink("/proc/self/ns/net")

// freeLANSubnet picks x for 10.214.x.0/24 used by no test LAN (their
// namespaces carry x in their names) and no interface here.
func freeLANSubnet() (int, error) {
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("ip addr show: %v", err)
	}
	used := string(out)
	taken := map[int]bool{}
	for _, ns := range lanNamespaces() {
		taken[ns.subnet] = true
	}
	start := os.Getpid() % 200
	for i := 0; i < 250; i++ {
		x := 1 + (start+i)%250
		if !taken[x] && !strings.Contains(used, fmt.Sprintf(" 10.214.%d.", x)) {
			return x, nil
		}
	}
	return 0, fmt.Errorf("no free 10.214.x.0/24 subnet for a test LAN")
}

type lanNamespace struct {
	name        string
	pid, subnet int
}

// lanNamespaces lists the namespaces NewLAN made, in any process.
func lanNamespaces() []lanNamespace {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var list []lanNamespace
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], lanPrefix) {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(f[0], lanPrefix), "-")
		if len(parts) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(parts[0])
		subnet, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			continue
		}
		list = append(list, lanNamespace{f[0], pid, subnet})
	}
	return list
}

// removeStaleLANs deletes the LANs of test processes that no longer run.
func removeStaleLANs() {
	for _, ns := range lanNamespaces() {
		if ns.pid == os.Getpid() || syscall.Kill(ns.pid, 0) == nil {
			continue
		}
		exec.Command("ip", "netns", "del", ns.name).Run()
	}
}
