//go:build linux

package pairing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/testenv"
)

type env struct {
	s        *testenv.SSHD
	ep       sshx.Endpoint
	home     string // the companion's folder (STRATA_COMPANION_HOME)
	keyFile  string
	settings string
	known    string
}

func newEnv(t *testing.T, opts testenv.SSHDOptions) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s := testenv.StartSSHD(t, opts)
	home := t.TempDir()
	e := &env{s: s, home: home,
		keyFile:  filepath.Join(home, "secrets", "relay_ed25519"),
		settings: filepath.Join(home, "settings.json"),
		known:    filepath.Join(home, "known_hosts")}
	var err error
	if e.ep, err = sshx.ParseEndpoint(s.User + "@" + s.Addr()); err != nil {
		t.Fatal(err)
	}
	return e
}

// pairOptions pair with a shell key (ShellKey, the CLI's --shell-key): the
// tests of that line. The default, agent-only, is TestDefaultPairingIsAgentOnlyIntegration's
// and TestAgentOnlyKeyRunsOnlyTheAgentIntegration's.
func (e *env) pairOptions() Options {
	return Options{
		ShellKey:           true,
		Endpoint:           e.ep,
		Auth:               []ssh.AuthMethod{ssh.PublicKeys(e.s.ClientSigner)},
		KnownHosts:         &sshx.KnownHosts{File: e.known, Accept: ssh.FingerprintSHA256(e.s.HostSigner.PublicKey())},
		KeyFile:            e.keyFile,
		Recorder:           fileRecorder(e.settings),
		AuthorizedKeysFile: e.s.AuthorizedKeysFile,
		Comment:            "strata-companion@testpc",
		Timeout:            10 * time.Second,
	}
}

// fileRecorder keeps the paired PC in a settings file (a test double of
// the settings' owner, internal/backend, which this package cannot import).
type fileRecorder string

func (f fileRecorder) RecordPairing(_ context.Context, r settings.Remote) error {
	st, err := settings.Load(string(f))
	if err != nil {
		return err
	}
	st.Remote = &r
	return st.Save(string(f))
}

func (f fileRecorder) RecordUnpair(context.Context) error {
	st, err := settings.Load(string(f))
	if err != nil {
		return err
	}
	st.Remote = nil
	return st.Save(string(f))
}

// paired is the second PC the test's settings hold (nil: none).
func (e *env) paired() *settings.Remote {
	st, err := settings.Load(e.settings)
	if err != nil {
		return nil
	}
	return st.Remote
}

// relayDial logs in as the relay will: the settings' key and pinned host key only.
func relayDial(t *testing.T, r *settings.Remote) (*ssh.Client, error) {
	signer, err := sshx.LoadSigner(r.KeyFile, nil)
	if err != nil {
		return nil, err
	}
	hk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey))
	if err != nil {
		t.Fatalf("pinned host key in settings: %v", err)
	}
	return sshx.Dial(context.Background(), sshx.Config{Endpoint: sshx.Endpoint{User: r.User, Host: r.Host, Port: r.Port},
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(hk), Timeout: 10 * time.Second})
}

func countLines(t *testing.T, file, word string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), word)
}

func TestPairThenUnpairIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.SSHDOptions{})
	before, _ := os.ReadFile(e.s.AuthorizedKeysFile)

	// Without an explicit yes, a first contact changes nothing.
	o := e.pairOptions()
	o.KnownHosts.Accept = ""
	_, err := Pair(context.Background(), o)
	var hk *sshx.HostKeyError
	if !errors.As(err, &hk) || hk.Changed() {
		t.Fatalf("pairing an unknown host without a yes: %v", err)
	}
	if _, err := os.Stat(e.keyFile); err == nil {
		t.Error("a key was made before the host was trusted")
	}

	var steps []string
	o = e.pairOptions()
	o.Progress = func(s string) { steps = append(steps, s) }
	res, err := Pair(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("steps: %q", steps)
	if !res.KeyCreated || res.Installed != e.s.AuthorizedKeysFile || res.OS != "linux" {
		t.Errorf("result %+v", res)
	}

	// The key: ed25519, 0600 in a 0700 folder.
	st, err := os.Stat(e.keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if dst, _ := os.Stat(filepath.Dir(e.keyFile)); dst.Mode().Perm() != 0o700 {
		t.Errorf("key folder mode %v", dst.Mode().Perm())
	}
	signer, err := sshx.LoadSigner(e.keyFile, nil)
	if err != nil || signer.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("key: %v", err)
	}

	// The line: restricted, ours, and the user's own key kept.
	ak, _ := os.ReadFile(e.s.AuthorizedKeysFile)
	if !strings.HasPrefix(string(ak), string(before)) {
		t.Errorf("the existing lines were changed:\n%s", ak)
	}
	if !strings.Contains(string(ak), "restrict ssh-ed25519 ") || !strings.HasSuffix(strings.TrimSpace(string(ak)), " strata-companion@testpc") {
		t.Errorf("authorized_keys:\n%s", ak)
	}

	// Settings and pin.
	s, err := settings.Load(e.settings)
	if err != nil || s.Remote == nil {
		t.Fatalf("settings: %+v %v", s, err)
	}
	r := *s.Remote
	// Over the loopback there is no card to wake: no MAC.
	if r.Host != e.ep.Host || r.Port != e.ep.Port || r.User != e.ep.User || r.KeyFile != e.keyFile || r.OS != "linux" || r.MAC != "" {
		t.Errorf("settings.Remote = %+v", r)
	}
	if want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(e.s.HostSigner.PublicKey()))); r.HostKey != want {
		t.Errorf("pinned %q, want %q", r.HostKey, want)
	}
	if keys, _ := sshx.PinnedKeys(e.known, e.ep); len(keys) != 1 {
		t.Errorf("known_hosts pins %d keys", len(keys))
	}

	// The relay's login works, and what restrict forbids is refused.
	c, err := relayDial(t, &r)
	if err != nil {
		t.Fatalf("logging in with the paired key: %v", err)
	}
	if l, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
		t.Error("the paired key may forward ports")
	}
	sess, _ := c.NewSession()
	if err := sess.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err == nil {
		t.Error("the paired key got a pty")
	}
	sess.Close()
	c.Close()

	// Pairing again reuses the key and keeps one line.
	res, err = Pair(context.Background(), e.pairOptions())
	if err != nil || res.KeyCreated {
		t.Fatalf("pairing again: %+v %v", res, err)
	}
	if n := countLines(t, e.s.AuthorizedKeysFile, "strata-companion@testpc"); n != 1 {
		t.Errorf("%d lines after pairing twice", n)
	}

	// Unpair: our line goes, the user's stays, and so do the key, pin, settings.
	got, err := Unpair(context.Background(), UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known,
		AuthorizedKeysFile: e.s.AuthorizedKeysFile, Comment: "strata-companion@testpc", Timeout: 10 * time.Second})
	if err != nil || got.Host != e.ep.Host {
		t.Fatalf("unpair: %+v %v", got, err)
	}
	if ak, _ := os.ReadFile(e.s.AuthorizedKeysFile); string(ak) != string(before) {
		t.Errorf("authorized_keys after unpair:\n%s\nwant:\n%s", ak, before)
	}
	if _, err := os.Stat(e.keyFile); !os.IsNotExist(err) {
		t.Errorf("key file still there: %v", err)
	}
	if keys, _ := sshx.PinnedKeys(e.known, e.ep); len(keys) != 0 {
		t.Error("host key still pinned")
	}
	if s, _ := settings.Load(e.settings); s.Remote != nil {
		t.Errorf("settings still name a second PC: %+v", s.Remote)
	}
	if _, err := Unpair(context.Background(), UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known}); !errors.Is(err, ErrNotPaired) {
		t.Errorf("unpair twice: %v", err)
	}
}

func TestPairWithAPasswordIntoTheUsersOwnHomeIntegration(t *testing.T) {
	t.Parallel()
	// A throwaway account with a password and a real home, whose sshd reads
	// ~/.ssh/authorized_keys: what a user's second PC looks like.
	u := testenv.NewUser(t)
	e := newEnv(t, testenv.SSHDOptions{ExtraConfig: []string{"Match User " + u.Name, "  AuthorizedKeysFile .ssh/authorized_keys"}})
	e.ep.User = u.Name
	o := e.pairOptions()
	o.Auth = nil
	o.AuthorizedKeysFile = ""
	asked := 0
	o.Password = func() (string, error) { asked++; return u.Password, nil }
	res, err := Pair(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(u.Home, ".ssh", "authorized_keys")
	if res.Installed != want || asked != 1 {
		t.Errorf("installed in %q (want %q), password asked %d times", res.Installed, want, asked)
	}
	for path, mode := range map[string]os.FileMode{filepath.Dir(want): 0o700, want: 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v (want %v)", path, st.Mode().Perm(), err, mode)
		}
	}
	s, _ := settings.Load(e.settings)
	c, err := relayDial(t, s.Remote)
	if err != nil {
		t.Fatalf("the relay's login: %v", err)
	}
	c.Close()

	// The companion's key alone is enough to unpair.
	if _, err := Unpair(context.Background(), UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known,
		Comment: "strata-companion@testpc", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, want, "ssh-ed25519"); n != 0 {
		t.Errorf("%d keys left in %s", n, want)
	}
	if _, err := relayDial(t, s.Remote); err == nil {
		t.Error("the unpaired key still logs in")
	}
}

func TestPairFailsCleanlyWhenTheServerIgnoresTheFileIntegration(t *testing.T) {
	t.Parallel()
	// The server reads another file than the one we write to: the proof
	// fails, and nothing is left behind.
	e := newEnv(t, testenv.SSHDOptions{})
	o := e.pairOptions()
	o.AuthorizedKeysFile = filepath.Join(t.TempDir(), "ignored_keys")
	_, err := Pair(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "logging in with it failed") {
		t.Fatalf("want a failed proof, got %v", err)
	}
	if b, _ := os.ReadFile(o.AuthorizedKeysFile); strings.Contains(string(b), "strata-companion@testpc") {
		t.Error("the line was left in the file")
	}
	if _, err := os.Stat(e.keyFile); !os.IsNotExist(err) {
		t.Error("the new key was left behind")
	}
	if s, _ := settings.Load(e.settings); s.Remote != nil {
		t.Error("settings were written")
	}
}

func TestUnpairForceWhenThePCIsGoneIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.SSHDOptions{})
	if _, err := Pair(context.Background(), e.pairOptions()); err != nil {
		t.Fatal(err)
	}
	e.s.Stop()
	uo := UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known, Comment: "strata-companion@testpc", Timeout: 3 * time.Second}
	if _, err := Unpair(context.Background(), uo); err == nil || sshx.Classify(err) != sshx.ReasonRefused {
		t.Fatalf("unpair of a PC that is off: %v", err)
	}
	if s, _ := settings.Load(e.settings); s.Remote == nil {
		t.Fatal("a failed unpair changed the settings")
	}
	uo.Force = true
	_, err := Unpair(context.Background(), uo)
	if err == nil || !strings.Contains(err.Error(), "strata-companion@testpc") {
		t.Errorf("forced unpair should say which line to remove by hand: %v", err)
	}
	if s, _ := settings.Load(e.settings); s.Remote != nil {
		t.Error("forced unpair kept the settings")
	}
	if _, err := os.Stat(e.keyFile); !os.IsNotExist(err) {
		t.Error("forced unpair kept the key")
	}
}

func TestForcedCommandPinsTheKeyAndUnpairFallsBackIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.SSHDOptions{})
	o := e.pairOptions()
	o.ShellKey, o.ForcedCommand = false, "echo strata-forced"
	if _, err := Pair(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, e.s.AuthorizedKeysFile, `restrict,command="echo strata-forced" ssh-ed25519 `); n != 1 {
		t.Fatalf("no forced-command line:\n%s", must(os.ReadFile(e.s.AuthorizedKeysFile)))
	}
	s, _ := settings.Load(e.settings)
	c, err := relayDial(t, s.Remote)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := c.NewSession()
	out, _ := sess.Output("uname -sm")
	sess.Close()
	c.Close()
	if strings.TrimSpace(string(out)) != "strata-forced" {
		t.Errorf("the key ran %q, not its forced command", out)
	}
	// The companion's key can no longer run what unpair needs: the user's
	// own credentials do it.
	_, err = Unpair(context.Background(), UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(e.s.ClientSigner)}, AuthorizedKeysFile: e.s.AuthorizedKeysFile,
		Comment: "strata-companion@testpc", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, e.s.AuthorizedKeysFile, "strata-companion@testpc"); n != 0 {
		t.Error("the forced-command line is still there")
	}
}

func must(b []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Pairing records the MAC address of the second PC's card that carries the
// ssh connection (for Wake-on-LAN): a "second PC" in a network namespace,
// reached over a veth pair whose address the test reads from sysfs there.
func TestPairRecordsTheMACIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd in a network namespace")
	}
	ns := testenv.NewNetns(t, testenv.NetnsOptions{})
	e := newEnv(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr})
	out, err := ns.Command("sh", "-c", "for d in /sys/class/net/*; do [ \"${d##*/}\" = lo ] || cat $d/address; done").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(out))
	if want == "" || strings.Contains(want, "\n") {
		t.Fatalf("the namespace's cards: %q", want)
	}
	res, err := Pair(context.Background(), e.pairOptions())
	if err != nil {
		t.Fatal(err)
	}
	if res.Remote.MAC != want {
		t.Errorf("MAC %q, the card there has %q", res.Remote.MAC, want)
	}
	if r := e.paired(); r == nil || r.MAC != want {
		t.Errorf("recorded %+v", r)
	}
}

func TestNormalizeMAC(t *testing.T) {
	for in, want := range map[string]string{
		"AA-BB-CC-0D-EE-FF":   "aa:bb:cc:0d:ee:ff",
		"aa:bb:cc:0d:ee:ff\n": "aa:bb:cc:0d:ee:ff",
		"00:00:00:00:00:00":   "", // the loopback
		"":                    "",
		"aa:bb:cc:dd:ee":      "",
		"not a mac at all!":   "",
	} {
		if got := NormalizeMAC(in); got != want {
			t.Errorf("NormalizeMAC(%q) = %q, want %q", in, got, want)
		}
	}
}
