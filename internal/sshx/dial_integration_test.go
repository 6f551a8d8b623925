//go:build linux

package sshx

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/strata-companion/companion/internal/testenv"
)

func startSSHD(t *testing.T) *testenv.SSHD {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	return testenv.StartSSHD(t, testenv.SSHDOptions{})
}

func endpointOf(t *testing.T, s *testenv.SSHD, user string) Endpoint {
	ep, err := ParseEndpoint(user + "@" + s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// run checks the connection is usable: one command, its output.
func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.Output(cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(out)
}

func TestHostKeyUnknownThenAcceptedThenPinnedThenChangedIntegration(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	ep := endpointOf(t, s, s.User)
	kh := &KnownHosts{File: filepath.Join(t.TempDir(), "cfg", "known_hosts")}
	auth := []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)}
	dial := func() (*ssh.Client, error) {
		return Dial(context.Background(), Config{Endpoint: ep, Auth: auth, HostKeyCallback: kh.Callback,
			HostKeyAlgorithms: kh.Algorithms(ep), Timeout: 5 * time.Second})
	}
	want := ssh.FingerprintSHA256(s.HostSigner.PublicKey())

	// First contact: refused, with the fingerprint to compare.
	_, err := dial()
	var hk *HostKeyError
	var ke *knownhosts.KeyError
	if !errors.As(err, &hk) || !errors.As(err, &ke) || len(ke.Want) != 0 {
		t.Fatalf("unknown host: err = %v, want a HostKeyError wrapping a KeyError with no Want", err)
	}
	if Classify(err) != ReasonHostKeyUnknown || hk.Fingerprint != want || !strings.Contains(err.Error(), want) {
		t.Fatalf("unknown host: reason %q, fingerprint %s (want %s), message %q", Classify(err), hk.Fingerprint, want, err)
	}
	if kh.AcceptedNew() {
		t.Error("AcceptedNew without an Accept")
	}

	// A yes to another fingerprint is no yes.
	kh.Accept = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if _, err = dial(); !errors.As(err, &hk) || hk.Rejected == "" || Classify(err) != ReasonHostKeyUnknown {
		t.Fatalf("a wrong accepted fingerprint: %v", err)
	}

	// The explicit yes: in, and then pinned.
	kh.Accept = want
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	if out := run(t, c, "echo ok"); out != "ok\n" {
		t.Errorf("echo = %q", out)
	}
	c.Close()
	if !kh.AcceptedNew() || kh.Presented() == nil {
		t.Fatal("the accepted key was not reported for pinning")
	}
	if err := Pin(kh.File, ep, kh.Presented()); err != nil {
		t.Fatal(err)
	}
	kh.Accept = ""
	c, err = dial()
	if err != nil {
		t.Fatalf("after pinning: %v", err)
	}
	c.Close()
	if kh.AcceptedNew() {
		t.Error("a pinned key reported as newly accepted")
	}
	if got := kh.Algorithms(ep); len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("Algorithms = %v", got)
	}

	// The PC "was reinstalled": a hard stop, even with its new fingerprint accepted.
	s.RotateHostKey()
	s.Stop()
	s.Start()
	kh.Accept = ssh.FingerprintSHA256(s.HostSigner.PublicKey())
	_, err = dial()
	if !errors.As(err, &ke) || len(ke.Want) == 0 || Classify(err) != ReasonHostKeyChanged {
		t.Fatalf("changed key: %v (reason %q)", err, Classify(err))
	}
	for _, w := range []string{"CHANGED", want, kh.Accept, "intercepting"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the changed-key message lacks %q: %s", w, err)
		}
	}

	// Unpin (what unpair does) makes it unknown again.
	if err := Unpin(kh.File, ep); err != nil {
		t.Fatal(err)
	}
	kh.Accept = ""
	if _, err = dial(); Classify(err) != ReasonHostKeyUnknown {
		t.Fatalf("after Unpin: %v", err)
	}
}

func pinned(t *testing.T, s *testenv.SSHD, ep Endpoint) *KnownHosts {
	kh := &KnownHosts{File: filepath.Join(t.TempDir(), "known_hosts")}
	if err := Pin(kh.File, ep, s.HostSigner.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return kh
}

func TestPasswordLoginIntegration(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	u := testenv.NewUser(t)
	ep := endpointOf(t, s, u.Name)
	kh := pinned(t, s, ep)
	asked := 0
	dial := func(pw string) error {
		c, err := Dial(context.Background(), Config{Endpoint: ep, HostKeyCallback: kh.Callback, Timeout: 10 * time.Second,
			Password: func() (string, error) { asked++; return pw, nil }})
		if err == nil {
			if got := strings.TrimSpace(run(t, c, "id -un")); got != u.Name {
				t.Errorf("logged in as %q", got)
			}
			c.Close()
		}
		return err
	}
	err := dial("not-" + u.Password)
	if Classify(err) != ReasonAuthFailed {
		t.Fatalf("wrong password: %v (reason %q)", err, Classify(err))
	}
	if tried := TriedMethods(err); !strings.Contains(strings.Join(tried, ","), "password") {
		t.Errorf("tried methods %v do not include password", tried)
	}
	if !strings.Contains(err.Error(), "refused the login") || !strings.Contains(err.Error(), u.Name) {
		t.Errorf("message: %s", err)
	}
	if asked != 1 {
		t.Errorf("the person was asked %d times for one login", asked)
	}
	if err := dial(u.Password); err != nil {
		t.Fatalf("right password: %v", err)
	}
}

func TestPasswordPromptDoesNotEatTheDeadlineIntegration(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	u := testenv.NewUser(t)
	ep := endpointOf(t, s, u.Name)
	kh := pinned(t, s, ep)
	// The person takes longer to type than the whole dial may take: the
	// deadline must wait for them, not cut them off.
	c, err := Dial(context.Background(), Config{Endpoint: ep, HostKeyCallback: kh.Callback, Timeout: 2 * time.Second,
		Password: func() (string, error) { time.Sleep(3 * time.Second); return u.Password, nil }})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestClosedPortIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ep, _ := ParseEndpoint("me@" + addr)
	kh := &KnownHosts{File: filepath.Join(t.TempDir(), "known_hosts")}
	_, err = Dial(context.Background(), Config{Endpoint: ep, HostKeyCallback: kh.Callback, Timeout: 5 * time.Second})
	if Classify(err) != ReasonRefused || !strings.Contains(err.Error(), "refused the connection") {
		t.Fatalf("closed port: %v (reason %q)", err, Classify(err))
	}
}

func TestSilentPortHitsTheDeadline(t *testing.T) {
	t.Parallel()
	// Accepts TCP, never says a word: a hung sshd, a tarpit, a wrong service.
	silent := testenv.SilentPort(t)
	ep, _ := ParseEndpoint("me@" + silent)
	kh := &KnownHosts{File: filepath.Join(t.TempDir(), "known_hosts")}
	done := make(chan error, 1)
	go func() {
		_, err := Dial(context.Background(), Config{Endpoint: ep, HostKeyCallback: kh.Callback, Timeout: time.Second})
		done <- err
	}()
	select {
	case err := <-done:
		if Classify(err) != ReasonTimedOut || !strings.Contains(err.Error(), "did not complete an ssh handshake") {
			t.Fatalf("silent port: %v (reason %q)", err, Classify(err))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Dial with a 1 s timeout still waits on a silent port after 30 s")
	}
}

func TestCancelEndsTheHandshake(t *testing.T) {
	silent := testenv.SilentPort(t)
	ep, _ := ParseEndpoint("me@" + silent)
	kh := &KnownHosts{File: filepath.Join(t.TempDir(), "known_hosts")}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := Dial(ctx, Config{Endpoint: ep, HostKeyCallback: kh.Callback, Timeout: time.Minute})
	if Classify(err) != ReasonCanceled {
		t.Fatalf("canceled dial: %v (reason %q)", err, Classify(err))
	}
}

func TestAgentAndKeyFileAuthIntegration(t *testing.T) {
	s := startSSHD(t)
	ep := endpointOf(t, s, s.User)
	kh := pinned(t, s, ep)
	dial := func(ua UserAuth) error {
		methods, closeFn, err := ua.Methods()
		if err != nil {
			return err
		}
		defer closeFn()
		c, err := Dial(context.Background(), Config{Endpoint: ep, Auth: methods, HostKeyCallback: kh.Callback, Timeout: 5 * time.Second})
		if err == nil {
			c.Close()
		}
		return err
	}

	t.Run("key file", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", "")
		if err := dial(UserAuth{IdentityFiles: []string{s.ClientKeyFile}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", "")
		if err := dial(UserAuth{}); Classify(err) != ReasonAuthFailed {
			t.Fatalf("no key, no agent, no password: %v", err)
		}
	})
	t.Run("encrypted key file", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", "")
		enc := filepath.Join(t.TempDir(), "enc")
		testenv.Copy(t, s.ClientKeyFile, enc, 0o600)
		if out, err := exec.Command("ssh-keygen", "-p", "-q", "-f", enc, "-N", "s3cret", "-P", "").CombinedOutput(); err != nil {
			testenv.Skip(t, "ssh-keygen: "+err.Error()+string(out))
		}
		if err := dial(UserAuth{IdentityFiles: []string{enc}}); err == nil || !strings.Contains(err.Error(), "passphrase") {
			t.Errorf("encrypted key with no way to ask: %v", err)
		}
		if err := dial(UserAuth{IdentityFiles: []string{enc}, Passphrase: func(string) ([]byte, error) { return []byte("wrong"), nil }}); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
			t.Errorf("wrong passphrase: %v", err)
		}
		if err := dial(UserAuth{IdentityFiles: []string{enc}, Passphrase: func(string) ([]byte, error) { return []byte("s3cret"), nil }}); err != nil {
			t.Errorf("right passphrase: %v", err)
		}
	})
	t.Run("ssh-agent", func(t *testing.T) {
		bins := testenv.LookPath(t, "ssh-agent", "ssh-add")
		sock := filepath.Join(t.TempDir(), "agent.sock")
		agentCmd := exec.Command(bins[0], "-D", "-a", sock)
		if err := agentCmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(sock); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		add := exec.Command(bins[1], s.ClientKeyFile)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		t.Setenv("SSH_AUTH_SOCK", sock)
		if err := dial(UserAuth{}); err != nil {
			t.Fatalf("with the key in the agent only: %v", err)
		}
		if err := dial(UserAuth{NoAgent: true}); Classify(err) != ReasonAuthFailed {
			t.Fatalf("NoAgent still used the agent: %v", err)
		}
	})
}

func TestPinKeepsOtherLinesAndReplacesSameType(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known_hosts")
	other := "# a comment\nother.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
	if err := os.WriteFile(file, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Host: "10.0.0.5", Port: 2222}
	k1, k2 := newKey(t), newKey(t)
	if err := Pin(file, ep, k1); err != nil {
		t.Fatal(err)
	}
	if err := Pin(file, ep, k2); err != nil {
		t.Fatal(err)
	}
	keys, err := PinnedKeys(file, ep)
	if err != nil || len(keys) != 1 || ssh.FingerprintSHA256(keys[0]) != ssh.FingerprintSHA256(k2) {
		t.Fatalf("after two pins: %d keys, %v", len(keys), err)
	}
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), other) || !strings.Contains(string(b), "[10.0.0.5]:2222 ssh-ed25519 ") {
		t.Fatalf("file:\n%s", b)
	}
	// The same host on port 22 is another entry.
	if keys, _ := PinnedKeys(file, Endpoint{Host: "10.0.0.5"}); len(keys) != 0 {
		t.Error("port 22 matched a pin for port 2222")
	}
	if err := Unpin(file, ep); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != other {
		t.Fatalf("after Unpin:\n%s", b)
	}
	if err := Unpin(filepath.Join(t.TempDir(), "missing"), ep); err != nil {
		t.Errorf("Unpin of a missing file: %v", err)
	}
}

func newKey(t *testing.T) ssh.PublicKey {
	dir := t.TempDir()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "k")).CombinedOutput(); err != nil {
		testenv.Skip(t, "ssh-keygen: "+err.Error()+string(out))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "k.pub"))
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// BenchmarkDial is one connect + handshake + key login against a real
// local sshd: what the relay pays when it (re)connects.
func BenchmarkDial(b *testing.B) {
	s := testenv.StartSSHD(b, testenv.SSHDOptions{})
	ep, _ := ParseEndpoint(s.User + "@" + s.Addr())
	cfg := Config{Endpoint: ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(s.HostSigner.PublicKey()), Timeout: 10 * time.Second}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := Dial(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// A server with two host keys presents the type that was pinned when the
// dial asks for it (Algorithms), and otherwise looks "changed".
func TestPinnedKeyTypeIsAskedForIntegration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	dir := t.TempDir()
	rsaFile := filepath.Join(dir, "host_rsa")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", rsaFile).CombinedOutput(); err != nil {
		testenv.Skip(t, "ssh-keygen: "+err.Error()+string(out))
	}
	s := testenv.StartSSHD(t, testenv.SSHDOptions{ExtraConfig: []string{"HostKey " + rsaFile}})
	b, _ := os.ReadFile(rsaFile + ".pub")
	rsaKey, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	ep := endpointOf(t, s, s.User)
	kh := &KnownHosts{File: filepath.Join(dir, "known_hosts")}
	if err := Pin(kh.File, ep, rsaKey); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Endpoint: ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)}, HostKeyCallback: kh.Callback, Timeout: 10 * time.Second}
	cfg.HostKeyAlgorithms = kh.Algorithms(ep)
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("asking for the pinned RSA key: %v", err)
	}
	c.Close()
	if kh.Presented().Type() != ssh.KeyAlgoRSA {
		t.Errorf("presented %s", kh.Presented().Type())
	}
	cfg.HostKeyAlgorithms = []string{ssh.KeyAlgoED25519}
	if _, err := Dial(context.Background(), cfg); Classify(err) != ReasonHostKeyChanged {
		t.Errorf("the other key type: %v", err)
	}
}
