//go:build linux

package pairing

import (
	"bytes"
	"context"
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

func TestMain(m *testing.M) { testenv.Main(m) }

// Pair and unpair a Windows second PC (the Windows test PC: cmd.exe under
// wine behind a real sshd): the agent .exe goes over sftp and installs the
// key where Windows' OpenSSH reads it for this login (wine's user is in
// Administrators, so %ProgramData%\ssh\administrators_authorized_keys, as
// for most people's own PC); the companion's key then logs in alone; unpair
// leaves the file byte for byte as it was (CRLF lines included). wine does
// not keep file ACLs: the ACL the agent sets is checked as planned (SDDL
// through the Windows API under wine), not as stored.
func TestPairAWindowsPCIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	pc := testenv.StartWindowsPC(t, testenv.WindowsPCOptions{})
	agentExe := pc.Wine.Build(t, "github.com/strata-companion/companion/relay")
	keysWin := `C:\ProgramData\ssh\administrators_authorized_keys`
	keys := pc.Path(keysWin)
	os.MkdirAll(filepath.Dir(keys), 0o700)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(keys)); os.RemoveAll(pc.Path("strata-companion")) })
	before := []byte("# the user's own keys\r\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake sam@laptop\r\n")
	if err := os.WriteFile(keys, before, 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	settingsFile := filepath.Join(home, "settings.json")
	ep, err := sshx.ParseEndpoint(pc.User + "@" + pc.Addr())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Endpoint:   ep,
		Auth:       []ssh.AuthMethod{ssh.PublicKeys(pc.ClientSigner)},
		KnownHosts: &sshx.KnownHosts{File: filepath.Join(home, "known_hosts"), Accept: ssh.FingerprintSHA256(pc.HostSigner.PublicKey())},
		KeyFile:    filepath.Join(home, "secrets", "relay_ed25519"),
		Recorder:   fileRecorder(settingsFile),
		Comment:    "strata-companion@testpc",
		Timeout:    20 * time.Second,
		AgentBinary: func(goos, goarch string) (string, error) {
			if goos != "windows" || goarch != "amd64" {
				t.Errorf("asked for an agent for %s/%s", goos, goarch)
			}
			return agentExe, nil
		},
	}
	res, err := Pair(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.OS != "windows" || res.Arch != "amd64" || !strings.EqualFold(res.Installed, keysWin) {
		t.Errorf("result %+v", res)
	}
	after, _ := os.ReadFile(keys)
	// Agent-only by default: the gate pins the file written. (This Windows
	// PC's sshd runs every command through ForceCommand, which wins over
	// command=: that the gate really runs on Windows is not tested here.)
	if !bytes.HasPrefix(after, before) || !bytes.HasSuffix(after, []byte(res.Line+"\r\n")) || !strings.HasPrefix(res.Line, `restrict,command="`) ||
		!strings.Contains(res.Line, `strata-vision-relay.exe gate --keys `+keysWin+`" ssh-ed25519 `) {
		t.Errorf("authorized_keys after pairing:\n%q", after)
	}
	// The ACL the agent sets, built through the Windows API under wine:
	// protected (no inheritance), full control for Administrators and
	// SYSTEM only (sshd's rule for this file); the user's own file adds the
	// user. What wine stores instead is logged.
	c := pc.Dial(t)
	winRun := func(cmd string) string {
		sess, _ := c.NewSession()
		defer sess.Close()
		out, err := sess.CombinedOutput(cmd)
		if err != nil {
			t.Errorf("%s: %v %s", cmd, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := winRun(`strata-companion\strata-vision-relay.exe authorized-keys acl-plan --file admin`); got != "D:P(A;;GA;;;BA)(A;;GA;;;SY)" {
		t.Errorf("the administrators file's ACL: %q", got)
	}
	if got := winRun(`strata-companion\strata-vision-relay.exe authorized-keys acl-plan`); !strings.HasPrefix(got, "D:P(A;;GA;;;BA)(A;;GA;;;SY)(A;;GA;;;S-1-5-21-") {
		t.Errorf("the user's file's ACL: %q", got)
	}
	t.Logf("the ACL wine reports for %s: %s", res.Installed, winRun(`strata-companion\strata-vision-relay.exe authorized-keys acl --file "`+res.Installed+`"`))
	// The relay's login: the settings' key and pin alone.
	st, err := settings.Load(settingsFile)
	if err != nil || st.Remote == nil {
		t.Fatalf("settings %+v %v", st, err)
	}
	rc, err := relayDial(t, st.Remote)
	if err != nil {
		t.Fatalf("the companion's key does not log in: %v", err)
	}
	rc.Close()
	// Pairing again: still one line.
	if _, err := Pair(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, keys, "strata-companion@testpc"); n != 1 {
		t.Errorf("%d lines of ours after pairing twice", n)
	}

	if _, err := Unpair(context.Background(), UnpairOptions{Remote: paired(t, settingsFile), Recorder: fileRecorder(settingsFile), KnownHosts: o.KnownHosts.File,
		Comment: o.Comment, Timeout: 20 * time.Second, AgentBinary: o.AgentBinary}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(keys); !bytes.Equal(got, before) {
		t.Errorf("unpair changed the user's lines:\n%q\nwant\n%q", got, before)
	}
	if _, err := os.Stat(o.KeyFile); err == nil {
		t.Error("the local key outlived unpair")
	}
}

// paired is the second PC recorded in the settings file.
func paired(t *testing.T, file string) *settings.Remote {
	st, err := settings.Load(file)
	if err != nil || st.Remote == nil {
		t.Fatalf("no second PC recorded in %s: %v", file, err)
	}
	return st.Remote
}
