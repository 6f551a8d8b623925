//go:build linux

package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// tcpEcho listens on h's address in h's namespace and echoes one line per
// connection; it returns the address to dial.
func tcpEcho(t *testing.T, h *LANHost) string {
	t.Helper()
	l, err := h.Listen("tcp", net.JoinHostPort(h.Addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return l.Addr().String()
}

// echoes dials addr from h and reports whether a line comes back.
func echoes(h *LANHost, addr string, timeout time.Duration) error {
	c, err := h.Dial("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		return err
	}
	b := make([]byte, 6)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if string(b) != "hello\n" {
		return fmt.Errorf("echo %q", b)
	}
	return nil
}

// multicastReceiver joins group on h's LAN interface, in h's namespace.
func multicastReceiver(t *testing.T, h *LANHost, group *net.UDPAddr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := inNetns(h.Name, func() error {
		ifi, err := net.InterfaceByName(h.Dev)
		if err != nil {
			return err
		}
		c, err = net.ListenMulticastUDP("udp4", ifi, group)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// multicastArrives sends datagrams to group from h every 50 ms for up to
// window and reports whether r got one.
func multicastArrives(t *testing.T, from *LANHost, group *net.UDPAddr, r *net.UDPConn, window time.Duration) bool {
	t.Helper()
	var s *net.UDPConn
	if err := inNetns(from.Name, func() (err error) {
		s, err = net.DialUDP("udp4", nil, group)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 64)
	// What an earlier check sent and left unread does not count.
	for {
		r.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, _, err := r.ReadFromUDP(buf); err != nil {
			break
		}
	}
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		s.Write([]byte("ping"))
		r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, _, err := r.ReadFromUDP(buf); err == nil && string(buf[:n]) == "ping" {
			return true
		}
	}
	return false
}

func TestLANIntegrationHostsTalkAndMulticastCanBeBlocked(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces and a bridge")
	}
	var names []string
	t.Run("inside", func(t *testing.T) {
		lan := NewLAN(t, 3)
		names = append(names, lan.Bridge)
		for _, h := range lan.Hosts {
			names = append(names, h.Name)
			out, err := h.Command("ip", "-o", "-4", "addr", "show").Output()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), " "+h.Addr+"/24") {
				t.Errorf("%s: no %s:\n%s", h.Name, h.Addr, out)
			}
			routes, _ := h.Command("ip", "route", "show", "224.0.0.0/4").Output()
			if !strings.Contains(string(routes), "dev "+h.Dev) {
				t.Errorf("%s: no multicast route via %s: %q", h.Name, h.Dev, routes)
			}
		}
		// Nothing of it on this machine's own network.
		if out, _ := exec.Command("ip", "-o", "addr", "show").Output(); bytes.Contains(out, []byte(lan.Hosts[0].Addr)) {
			t.Errorf("a LAN address on this machine's interfaces:\n%s", out)
		}
		if c, err := net.DialTimeout("tcp", tcpEcho(t, lan.Hosts[1]), 300*time.Millisecond); err == nil {
			c.Close()
			t.Error("a LAN host is reachable from this machine's own namespace")
		}

		addr1 := tcpEcho(t, lan.Hosts[1])
		if err := echoes(lan.Hosts[0], addr1, 5*time.Second); err != nil {
			t.Fatalf("host 0 to host 1: %v", err)
		}
		if err := echoes(lan.Hosts[2], addr1, 5*time.Second); err != nil {
			t.Fatalf("host 2 to host 1: %v", err)
		}

		group := &net.UDPAddr{IP: net.IPv4(239, 255, 214, 1), Port: 25353}
		r := multicastReceiver(t, lan.Hosts[0], group)
		if !multicastArrives(t, lan.Hosts[1], group, r, 5*time.Second) {
			t.Fatal("multicast from host 1 did not reach host 0")
		}
		if err := lan.BlockMulticast(); err != nil {
			t.Fatal(err)
		}
		if multicastArrives(t, lan.Hosts[1], group, r, time.Second) {
			t.Error("multicast crossed the bridge after BlockMulticast")
		}
		if err := echoes(lan.Hosts[0], addr1, 5*time.Second); err != nil {
			t.Errorf("unicast broken by BlockMulticast: %v", err)
		}
		if err := lan.RestoreMulticast(); err != nil {
			t.Fatal(err)
		}
		if !multicastArrives(t, lan.Hosts[1], group, r, 5*time.Second) {
			t.Error("multicast did not come back after RestoreMulticast")
		}

		if err := lan.Hosts[1].CutLink(); err != nil {
			t.Fatal(err)
		}
		if err := echoes(lan.Hosts[0], addr1, 500*time.Millisecond); err == nil {
			t.Error("host 1 answers with its link cut")
		}
		if err := lan.Hosts[1].RestoreLink(); err != nil {
			t.Fatal(err)
		}
		WaitFor(t, 10*time.Second, "host 1 back on the LAN", func() bool {
			return echoes(lan.Hosts[0], addr1, 500*time.Millisecond) == nil
		})
		if !multicastArrives(t, lan.Hosts[1], group, r, 5*time.Second) {
			t.Error("multicast from host 1 lost after RestoreLink (its multicast route?)")
		}
	})
	if len(names) == 0 {
		return
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, n := range names {
		if strings.Contains(string(out), n) {
			t.Errorf("namespace %s left behind", n)
		}
	}
}

func TestLANIntegrationSSHDInAHost(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces and starts sshd")
	}
	lan := NewLAN(t, 2)
	h := lan.Hosts[1]
	s := StartSSHD(t, SSHDOptions{Netns: h.Name, ListenHost: h.Addr})
	// A second server in the same host gets a port of its own.
	s2 := StartSSHD(t, SSHDOptions{Netns: h.Name, ListenHost: h.Addr})
	if s2.Port == s.Port {
		t.Fatalf("two servers on port %d", s.Port)
	}
	conn, err := lan.Hosts[0].Dial("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cc, chans, reqs, err := ssh.NewClientConn(conn, s.Addr(), &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(s.HostSigner.PublicKey()),
		Timeout:         5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ssh.NewClient(cc, chans, reqs)
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.Output("ip -o -4 addr show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), h.Addr) || strings.Contains(string(out), lan.Hosts[0].Addr) {
		t.Errorf("the session did not run in host 1:\n%s", out)
	}
}

func TestLANIntegrationRemovesStaleLANs(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces")
	}
	Root(t)
	LookPath(t, "ip", "bridge")
	// A process that has ended: its pid names the "killed run's" LAN.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-250-br", lanPrefix, dead.Process.Pid)
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		Skip(t, fmt.Sprintf("ip netns add: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", stale).Run() })
	NewLAN(t, 1)
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), stale) {
		t.Errorf("stale namespace %s not removed:\n%s", stale, out)
	}
}
