//go:build linux

package testenv

import (
	"net"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestSSHDAcceptsTheClientKeyAndRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s := StartSSHD(t, SSHDOptions{})
	dial := func() error {
		c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
			User:            s.User,
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
			HostKeyCallback: ssh.FixedHostKey(s.HostSigner.PublicKey()),
			Timeout:         5 * time.Second,
		})
		if err != nil {
			return err
		}
		defer c.Close()
		sess, err := c.NewSession()
		if err != nil {
			return err
		}
		defer sess.Close()
		out, err := sess.Output("echo hello")
		if err == nil && string(out) != "hello\n" {
			t.Errorf("remote echo = %q", out)
		}
		return err
	}
	if err := dial(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("sshd still listens after Stop")
	}
	s.Start()
	if err := dial(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
