// Package remote is the second PC as both the relay (internal/relay) and
// prepare (internal/relay/prepare) reach it: the ssh transport (Conn, one
// connection that starts agent sessions), the agent's command line there
// (AgentArgs, one definition in internal/agentcmd), and the device its
// encoder reads on (RemoteDevice). internal/relay re-exports its names
// (remote.Conn, remote.AgentArgs, remote.RemoteDevice, ...).
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// Conn is one connection to the second PC that can start agent sessions.
type Conn interface {
	// Start runs command there with its stdin/stdout/stderr as pipes.
	Start(command string) (Proc, error)
	// Alive checks the connection with one round trip.
	Alive(ctx context.Context) error
	// Done is closed when the connection has ended.
	Done() <-chan struct{}
	Close() error
}

// Proc is a command running on the second PC.
type Proc struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	Stderr io.Reader
	// Close ends the session (the remote side sees its input end).
	Close func() error
	// Kill asks the second PC's sshd to SIGKILL the agent's process group
	// (an agent that is hung or stopped cannot read its input's end);
	// nil, or an error, where the server refuses signals.
	Kill func() error
	// Expect, where not nil, promises the transport that at least n more
	// bytes of Stdout are on their way (a result frame's announced rest),
	// so it can read them in batches (sshx.Client.ExpectIncoming).
	Expect func(n int64)
}

// Dialer opens a connection within the timeout.
type Dialer func(ctx context.Context, timeout time.Duration) (Conn, error)

// SSHDialer dials the second PC of r: the pinned host key and the paired key
// only; never the user's own ssh setup.
func SSHDialer(r settings.Remote) Dialer {
	return func(ctx context.Context, timeout time.Duration) (Conn, error) {
		if r.Host == "" {
			return nil, errors.New("no second PC is set in the companion settings; pair one first (strata-service remote pair)")
		}
		if strings.TrimSpace(r.HostKey) == "" {
			return nil, fmt.Errorf("the host key of the second PC %s is not pinned in the companion settings; pair it again (strata-service remote pair)", r.Host)
		}
		hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey))
		if err != nil {
			return nil, fmt.Errorf("the pinned host key of %s in the companion settings is unreadable (%v); pair it again", r.Host, err)
		}
		signer, err := sshx.LoadSigner(r.KeyFile, nil)
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("the account %s cannot read the companion's key %s for second PC %s: remote pictures need Strata to run under the Strata Companion service (start it with `strata-service start`, not with Strata's own run script)", accountName(), r.KeyFile, r.Host)
		}
		if err != nil {
			return nil, fmt.Errorf("%v; pair the second PC again (strata-service remote pair)", err)
		}
		user := r.User
		if user == "" {
			return nil, fmt.Errorf("no user name for the second PC %s in the companion settings; pair it again", r.Host)
		}
		c, err := sshx.DialClient(ctx, sshx.Config{
			Endpoint:          sshx.Endpoint{User: user, Host: r.Host, Port: r.Port},
			Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback:   ssh.FixedHostKey(hostKey),
			HostKeyAlgorithms: hostKeyAlgorithms(hostKey.Type()),
			Timeout:           timeout,
		})
		if err != nil {
			return nil, err
		}
		s := newSSHConn(c.Client)
		s.expect = c.ExpectIncoming
		return s, nil
	}
}

// hostKeyAlgorithms asks the server for the pinned key's type, so a server
// with several host keys presents the pinned one.
func hostKeyAlgorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

type sshConn struct {
	c      *ssh.Client
	done   chan struct{}
	expect func(n int64) // nil: the socket is read as it comes
}

func newSSHConn(c *ssh.Client) *sshConn {
	s := &sshConn{c: c, done: make(chan struct{})}
	go func() { c.Wait(); close(s.done) }()
	return s
}

// NewSSHConn wraps an ssh client already dialed (prepare uses it).
func NewSSHConn(c *ssh.Client) Conn { return newSSHConn(c) }

// BorrowSSHConn wraps an ssh client the caller owns and closes: the
// connection is not watched (Done is never closed).
func BorrowSSHConn(c *ssh.Client) Conn { return &sshConn{c: c, done: make(chan struct{})} }

// SSHClient is the ssh connection under a Conn made by SSHDialer,
// NewSSHConn or BorrowSSHConn (nil for other Conns): uploads that need no
// agent use its sftp subsystem.
func SSHClient(c Conn) *ssh.Client {
	if s, ok := c.(*sshConn); ok {
		return s.c
	}
	return nil
}

func (s *sshConn) Start(command string) (Proc, error) {
	sess, err := s.c.NewSession()
	if err != nil {
		return Proc{}, err
	}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sess.Close()
		return Proc{}, err
	}
	if err := sess.Start(command); err != nil {
		sess.Close()
		return Proc{}, err
	}
	return Proc{Stdin: stdin, Stdout: stdout, Stderr: stderr, Close: sess.Close,
		Kill: func() error { return sess.Signal(ssh.SIGKILL) }, Expect: s.expect}, nil
}

func (s *sshConn) Alive(ctx context.Context) error {
	res := make(chan error, 1)
	go func() {
		// OpenSSH answers an unknown global request with a failure: any
		// answer proves the PC and its sshd are there.
		_, _, err := s.c.SendRequest("keepalive@openssh.com", true, nil)
		res <- err
	}()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errors.New("the connection closed")
	}
}

func (s *sshConn) Done() <-chan struct{} { return s.done }
func (s *sshConn) Close() error          { return s.c.Close() }

// accountName names the account the relay runs as, for messages.
func accountName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "running Strata"
}
