//go:build linux

package testenv

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is a real OpenSSH server on loopback, private to one test: its own
// host key, authorized_keys, PID file and log in a temp folder.
type SSHD struct {
	t    testing.TB
	bin  string
	Dir  string
	Host string // 127.0.0.1 unless ListenHost was set
	Port int
	User string // the account tests log in as (the one running the tests)

	HostSigner    ssh.Signer // the server's host key
	ClientSigner  ssh.Signer // a key in authorized_keys
	ClientKeyFile string     // that key as an OpenSSH private key file (0600)

	AuthorizedKeysFile string
	LogFile            string

	opts SSHDOptions
	cmd  *exec.Cmd
}

// SSHDOptions tunes the server.
type SSHDOptions struct {
	// PathDirs are put first on the PATH of commands run over ssh (a fake
	// nvidia-smi, a stand-in strata-vision).
	PathDirs []string
	// ListenHost defaults to 127.0.0.1 (a namespace's address for link tests).
	ListenHost string
	// Netns runs sshd inside that network namespace (ip netns exec).
	Netns string
	// ExtraConfig lines are appended to sshd_config.
	ExtraConfig []string
	// AuthorizedKeysFiles are read after the fixture's own file (a Windows
	// PC's %USERPROFILE%\.ssh\authorized_keys).
	AuthorizedKeysFiles []string
}

// StartSSHD starts sshd and stops it when t ends.
func StartSSHD(t testing.TB, opts SSHDOptions) *SSHD {
	t.Helper()
	bin := LookPath(t, "sshd")[0]
	dir := t.TempDir()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := &SSHD{t: t, bin: bin, Dir: dir, User: u.Username, opts: opts, Host: opts.ListenHost}
	if s.Host == "" {
		s.Host = "127.0.0.1"
	}
	s.HostSigner = s.writeKey(filepath.Join(dir, "host_ed25519"))
	s.ClientKeyFile = filepath.Join(dir, "client_ed25519")
	s.ClientSigner = s.writeKey(s.ClientKeyFile)
	s.AuthorizedKeysFile = filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(s.AuthorizedKeysFile, ssh.MarshalAuthorizedKey(s.ClientSigner.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.LogFile = filepath.Join(dir, "sshd.log")
	os.MkdirAll("/run/sshd", 0o755) // privilege separation folder Debian's sshd insists on
	s.Port = freePort(t, s.Host, opts.Netns)
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

func (s *SSHD) writeKey(path string) ssh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "strata-companion-test")
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		s.t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		s.t.Fatal(err)
	}
	return signer
}

// RotateHostKey gives the server a new host key (takes effect on Restart):
// what a client sees when the second PC was reinstalled, or impersonated.
func (s *SSHD) RotateHostKey() { s.HostSigner = s.writeKey(filepath.Join(s.Dir, "host_ed25519")) }

// Addr is host:port.
func (s *SSHD) Addr() string { return net.JoinHostPort(s.Host, fmt.Sprint(s.Port)) }

func (s *SSHD) config() string {
	path := strings.Join(append(append([]string{}, s.opts.PathDirs...), "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"), ":")
	lines := []string{
		fmt.Sprintf("Port %d", s.Port),
		"ListenAddress " + s.Host,
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"AuthorizedKeysFile " + strings.Join(append([]string{s.AuthorizedKeysFile}, s.opts.AuthorizedKeysFiles...), " "),
		"StrictModes no",
		"UsePAM no",
		"PermitRootLogin yes",
		"PasswordAuthentication yes",
		"KbdInteractiveAuthentication no",
		"MaxStartups 100",
		"LogLevel VERBOSE",
		"SetEnv PATH=" + path,
	}
	return strings.Join(append(lines, s.opts.ExtraConfig...), "\n") + "\n"
}

// Start starts (or restarts after Stop) the server on the same port and
// waits until it greets.
func (s *SSHD) Start() {
	s.t.Helper()
	cfg := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(s.config()), 0o600); err != nil {
		s.t.Fatal(err)
	}
	args := []string{s.bin, "-D", "-e", "-f", cfg, "-E", s.LogFile}
	if s.opts.Netns != "" {
		args = append([]string{"ip", "netns", "exec", s.opts.Netns}, args...)
	}
	if out, err := exec.Command(s.bin, "-t", "-f", cfg).CombinedOutput(); err != nil {
		s.t.Fatalf("sshd -t rejected its config: %v\n%s", err, out)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s.cmd = exec.Command(args[0], args[1:]...)
		if err := s.cmd.Start(); err != nil {
			s.t.Fatalf("starting sshd: %v", err)
		}
		if lastErr = s.waitGreeting(10 * time.Second); lastErr == nil {
			return
		}
		s.Stop()
		time.Sleep(200 * time.Millisecond)
	}
	log, _ := os.ReadFile(s.LogFile)
	s.t.Fatalf("sshd did not come up on %s: %v\n%s", s.Addr(), lastErr, log)
}

func (s *SSHD) waitGreeting(within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		var c net.Conn
		c, err = s.dialRaw()
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			var line string
			line, err = bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && strings.HasPrefix(line, "SSH-") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

func (s *SSHD) dialRaw() (net.Conn, error) {
	if s.opts.Netns == "" {
		return net.DialTimeout("tcp", s.Addr(), time.Second)
	}
	// From inside the namespace: a NewNetns one is reachable from here too,
	// but a NewLAN host has no route from this machine's own namespace.
	return dialInNetns(s.opts.Netns, "tcp", s.Addr(), time.Second)
}

// Stop ends the server (and every session it serves).
func (s *SSHD) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// sshd puts each connection in a session of its own (setsid), so a
	// process-group kill misses them: end the listener's whole tree, as a
	// PC that goes away would.
	KillTree(s.cmd.Process.Pid)
	s.cmd.Wait()
	s.cmd = nil
}

// HostKeyLine is the host key as a known_hosts line for this server.
func (s *SSHD) HostKeyLine() string {
	host := s.Host
	if s.Port != 22 {
		host = fmt.Sprintf("[%s]:%d", s.Host, s.Port)
	}
	return host + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostSigner.PublicKey())))
}

func freePort(t testing.TB, host, netns string) int {
	if netns != "" {
		// Listen inside the namespace and take the port the kernel gives
		// (two servers in one LAN host must not pick the same one).
		var port int
		if err := inNetns(netns, func() error {
			l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				return err
			}
			port = l.Addr().(*net.TCPAddr).Port
			return l.Close()
		}); err != nil {
			t.Fatal(err)
		}
		return port
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
