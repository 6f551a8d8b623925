//go:build linux

package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// remoteCLI runs strata-service in-process with its own companion folder and an
// empty home (no ~/.ssh of the machine's user, no agent).
func remoteCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &o, &e)
	return o.String(), e.String(), code
}

func isolate(t *testing.T) string {
	home := t.TempDir()
	t.Setenv(locations.EnvHome, filepath.Join(home, "companion"))
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	return home
}

func fakeSMIDir(t *testing.T) string {
	dir := t.TempDir()
	testenv.WriteExecutable(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\necho '0, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 412, 5606, 581.57, 8.6, Disabled'\n"))
	return dir
}

// The check: reachable with the fake GPU and the link figures;
// refused, saying why, once the host key changed; a silent port given up
// on within the deadline.
func TestProbeSSHCLIIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	isolate(t)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeSMIDir(t)}})
	target := s.User + "@" + s.Addr()
	fp := ssh.FingerprintSHA256(s.HostSigner.PublicKey())

	out, _, code := remoteCLI(t, "", "probe", "--ssh", target, "--identity", s.ClientKeyFile, "--transfer-mb", "1")
	if code != 1 || !strings.Contains(out, "host key unknown") || !strings.Contains(out, "--accept-host-key "+fp) {
		t.Fatalf("unknown host: exit %d\n%s", code, out)
	}

	out, errOut, code := remoteCLI(t, "", "probe", "--ssh", target, "--identity", s.ClientKeyFile, "--accept-host-key", fp, "--transfer-mb", "1")
	t.Logf("probe --ssh:\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"reachable", "trusted and pinned", "NVIDIA GeForce RTX 3060 Laptop GPU", "5606 MiB", "round trip", "up ", "down ", "One 1024x1024 picture read there", "Compared with this PC", "Recommendation"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}

	// Pinned now: no flag needed; JSON for programs.
	out, _, code = remoteCLI(t, "", "probe", "--ssh", target, "--identity", s.ClientKeyFile, "--json", "--transfer-mb", "1")
	var j sshProbeOutput
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if !j.Reachable || j.HostKeyPinned || j.HostKeyFingerprint != fp || len(j.Remote.GPUs) != 1 || j.Remote.RTT <= 0 ||
		j.Remote.UpBytesPerSec <= 0 || j.Remote.DownBytesPerSec <= 0 || !j.Remote.Estimate.Available || j.Recommendation == nil {
		t.Errorf("json report: %+v", j)
	}

	s.RotateHostKey()
	s.Stop()
	s.Start()
	out, _, code = remoteCLI(t, "", "probe", "--ssh", target, "--identity", s.ClientKeyFile, "--accept-host-key", ssh.FingerprintSHA256(s.HostSigner.PublicKey()))
	if code != 1 || !strings.Contains(out, "NOT reachable (host key changed)") || !strings.Contains(out, "CHANGED") {
		t.Errorf("changed host key: exit %d\n%s", code, out)
	}

	// A port that accepts and never speaks.
	silent := testenv.SilentPort(t)
	done := make(chan struct{})
	go func() {
		out, _, code = remoteCLI(t, "", "probe", "--ssh", "me@"+silent, "--connect-timeout", "2s")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("probe --ssh of a silent port still runs after 60 s with --connect-timeout 2s")
	}
	if code != 1 || !strings.Contains(out, "NOT reachable (timed out)") {
		t.Errorf("silent port: exit %d\n%s", code, out)
	}
}

func TestRemotePairProbeUnpairCLIIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	home := isolate(t)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeSMIDir(t)}})
	target := s.User + "@" + s.Addr()
	fp := ssh.FingerprintSHA256(s.HostSigner.PublicKey())
	before, _ := os.ReadFile(s.AuthorizedKeysFile)
	// The user's own default key is encrypted, and no one is at a terminal
	// to type its passphrase: it must be passed over, not stop the command.
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", filepath.Join(home, ".ssh", "id_ed25519")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}

	// --shell-key: the weaker key, whose probe needs no login of the user's
	// (the default, agent-only, is TestRemotePairIsAgentOnlyByDefaultCLIIntegration's).
	out, errOut, code := remoteCLI(t, "", "remote", "pair", target, "--identity", s.ClientKeyFile, "--accept-host-key", fp,
		"--authorized-keys", s.AuthorizedKeysFile, "--shell-key")
	if code != 0 || !strings.Contains(out, "Paired with "+target) || !strings.Contains(out, "Host key pinned: "+fp) || !strings.Contains(out, "with a shell") {
		t.Fatalf("pair: exit %d\n%s\n%s", code, out, errOut)
	}
	st, err := settings.LoadDefault()
	if err != nil || st.Remote == nil || st.Remote.KeyFile != locations.RelayKeyFile() {
		t.Fatalf("settings after pair: %+v %v", st, err)
	}
	// The key is for the service alone; the settings beside it are for all.
	for dir, mode := range map[string]os.FileMode{locations.Path(locations.SecretsDir): 0o700, locations.Path(locations.ConfigDir): 0o755} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v (want %v)", dir, fi.Mode().Perm(), err, mode)
		}
	}

	// Once paired, the probe gets in with the companion's key alone.
	out, _, code = remoteCLI(t, "", "probe", "--ssh", target, "--transfer-mb", "1")
	if code != 0 || !strings.Contains(out, "reachable") || !strings.Contains(out, "(pinned)") {
		t.Errorf("probe of the paired PC without credentials: exit %d\n%s", code, out)
	}

	out, errOut, code = remoteCLI(t, "", "remote", "unpair", "--authorized-keys", s.AuthorizedKeysFile)
	if code != 0 || !strings.Contains(out, "Unpaired") {
		t.Fatalf("unpair: exit %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(s.AuthorizedKeysFile); string(after) != string(before) {
		t.Errorf("authorized_keys after unpair:\n%s", after)
	}
	if _, err := os.Stat(locations.RelayKeyFile()); !os.IsNotExist(err) {
		t.Error("the companion's key is still there")
	}

	// Flags of one subcommand are not taken by another.
	_, errOut, code = remoteCLI(t, "", "remote", "unpair", "--forced-command", "x")
	if code != 2 {
		t.Errorf("unpair --forced-command: exit %d %s", code, errOut)
	}
}

// `remote pair` with no option pins the key to the agent; `remote unpair`
// then removes the line with the companion's key alone (no login of the
// user's), leaving every other line byte for byte. Options that contradict
// each other are refused before anything is dialed.
func TestRemotePairIsAgentOnlyByDefaultCLIIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	isolate(t)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeSMIDir(t)}})
	target := s.User + "@" + s.Addr()
	fp := ssh.FingerprintSHA256(s.HostSigner.PublicKey())
	bins := t.TempDir()
	agent := testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Dir: bins, Name: "strata-vision-relay"})
	remoteDir := filepath.Join(t.TempDir(), "pc2")
	before, _ := os.ReadFile(s.AuthorizedKeysFile)

	for _, bad := range [][]string{{"--shell-key", "--encoder", "/opt/strata/engine/strata-vision"}, {"--shell-key", "--agent-only"},
		{"--forced-command", "echo x", "--allow-encoder", agent}} {
		if _, errOut, code := remoteCLI(t, "", append([]string{"remote", "pair", target}, bad...)...); code != 2 {
			t.Errorf("pair %q: exit %d %s; want 2", bad, code, errOut)
		}
	}
	// The Strata install here: its engine/strata-vision is this PC's build,
	// allowed on the second PC by itself (same OS and architecture).
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{Vision: true})
	enc, _ := os.ReadFile(filepath.Join(root.Dir, "engine", "strata-vision"))
	sum := sha256.Sum256(enc)
	out, errOut, code := remoteCLI(t, "", "remote", "pair", "--strata-root", root.Dir, "--config", root.Config, target, "--identity", s.ClientKeyFile,
		"--accept-host-key", fp, "--authorized-keys", s.AuthorizedKeysFile, "--agent-binary", agent, "--remote-dir", remoteDir)
	if code != 0 || !strings.Contains(out, "agent-only") || !strings.Contains(out, "Allowed for prepare to install: 1 program") {
		t.Fatalf("pair: exit %d\n%s\n%s", code, out, errOut)
	}
	ak, _ := os.ReadFile(s.AuthorizedKeysFile)
	want := `restrict,command="` + filepath.Join(remoteDir, "strata-vision-relay") + ` gate --allow ` + hex.EncodeToString(sum[:]) + ` --keys ` + s.AuthorizedKeysFile + `" ssh-ed25519 `
	if !strings.Contains(string(ak), want) {
		t.Fatalf("authorized_keys after pair:\n%s\nwant a line with %q", ak, want)
	}
	out, errOut, code = remoteCLI(t, "", "remote", "unpair")
	if code != 0 || !strings.Contains(out, "Unpaired") {
		t.Fatalf("unpair with the companion's key alone: exit %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(s.AuthorizedKeysFile); string(after) != string(before) {
		t.Errorf("authorized_keys after unpair:\n%q\nwant\n%q", after, before)
	}
}
