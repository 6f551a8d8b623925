//go:build linux

package testenv

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestNetnsHostsAnSSHDAndIsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a network namespace and starts sshd in it")
	}
	var name string
	t.Run("inside", func(t *testing.T) {
		n := NewNetns(t, NetnsOptions{RateMbit: 200})
		name = n.Name
		s := StartSSHD(t, SSHDOptions{Netns: n.Name, ListenHost: n.PeerAddr})
		c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
			User:            s.User,
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
			HostKeyCallback: ssh.FixedHostKey(s.HostSigner.PublicKey()),
			Timeout:         5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		// The session's commands run in the namespace: they see its address.
		out, err := sess.Output("ip -o -4 addr show")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), n.PeerAddr) || strings.Contains(string(out), n.HostAddr) {
			t.Errorf("the command did not run inside the namespace:\n%s", out)
		}
		q, _ := n.Command("tc", "qdisc", "show").Output()
		if !strings.Contains(string(q), "tbf") {
			t.Errorf("no tbf qdisc in the namespace:\n%s", q)
		}
	})
	if name == "" {
		return
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), name) {
		t.Errorf("namespace %s left behind", name)
	}
}
