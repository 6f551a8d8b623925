//go:build linux

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// relayBins builds strata-vision-relay (the agent prepare uploads) and the
// encoder stand-in into a temporary folder.
func relayBins(t *testing.T) string {
	t.Helper()
	bins := t.TempDir()
	testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Dir: bins, Name: "strata-vision-relay"})
	testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Dir: bins, Name: "standin"})
	return bins
}

func TestRemotePrepareCLIIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and starts a real sshd")
	}
	isolate(t)
	if _, stderr, code := remoteCLI(t, "", "remote", "prepare"); code != 1 || !strings.Contains(stderr, "remote pair") {
		t.Fatalf("prepare before pairing: exit %d: %s", code, stderr)
	}
	bins := relayBins(t)
	// The second PC has an NVIDIA GPU (the stand-in nvidia-smi on its PATH).
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{smi}})
	// What pairing leaves behind.
	st := &settings.Settings{Remote: &settings.Remote{Host: s.Host, Port: s.Port, User: s.User,
		HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostSigner.PublicKey()))), KeyFile: s.ClientKeyFile}}
	if err := st.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	mm, model := filepath.Join(local, "mmproj.gguf"), filepath.Join(local, "m-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(mm, 48)
	fakeencoder.WriteModel(model, 30)
	remoteDir := filepath.Join(t.TempDir(), "pc2")
	out, stderr, code := remoteCLI(t, "", "remote", "prepare", "--mmproj", mm, "--model", model,
		"--agent-binary", filepath.Join(bins, "strata-vision-relay"), "--local-encoder", filepath.Join(bins, "standin"),
		"--remote-dir", remoteDir, "--max-tokens", "4")
	if code != 0 || !strings.Contains(out, "answered READY 48") {
		t.Fatalf("prepare: exit %d\n%s\n%s", code, out, stderr)
	}
	got, _ := settings.Load(locations.SettingsFile())
	if r := got.Remote; r.RemoteDir != remoteDir || r.NEmbd != 48 || r.OS != "linux" || r.EncoderPath != "strata-vision" || r.HostKey != st.Remote.HostKey {
		t.Fatalf("settings after prepare: %+v", r)
	}
	// A fresh second PC: its shell's "not found" is expected and said in words.
	if strings.Contains(out+stderr, "sh: 1:") || strings.Contains(out+stderr, "not found") || !strings.Contains(stderr, "no agent on the second PC yet") {
		t.Errorf("prepare on a fresh second PC printed:\n%s\n%s", out, stderr)
	}
	// What it found there, recorded for the relay: the GPU, read on by the
	// encoder it started (--gpu), and how long that start took.
	if r := got.Remote; len(r.GPUs) != 1 || r.GPUs[0].Name != "NVIDIA GeForce RTX 3060 Laptop GPU" || r.GPUs[0].TotalMiB != 6144 || r.NoGPU || r.EncoderStartMS <= 0 {
		t.Errorf("prepare recorded GPUs %+v, no_gpu %v, start %d ms", r.GPUs, r.NoGPU, r.EncoderStartMS)
	}
	if !strings.Contains(stderr, "reads pictures on its GPU NVIDIA GeForce RTX 3060 Laptop GPU (1383 MiB of VRAM)") ||
		!strings.Contains(out, "Pictures are read on its GPU NVIDIA GeForce RTX 3060 Laptop GPU (1383 MiB of VRAM).") {
		t.Errorf("prepare does not say the encoder reads on the GPU:\n%s", out)
	}
	// Prepared again with the GPU gone: the record says so.
	testenv.SetGPUs(t, smi, nil)
	out, stderr, code = remoteCLI(t, "", "remote", "prepare", "--mmproj", mm, "--model", model,
		"--agent-binary", filepath.Join(bins, "strata-vision-relay"), "--local-encoder", filepath.Join(bins, "standin"),
		"--remote-dir", remoteDir, "--max-tokens", "4")
	got, _ = settings.Load(locations.SettingsFile())
	if code != 0 || !got.Remote.NoGPU || len(got.Remote.GPUs) != 0 || !strings.Contains(stderr, "on its CPU") || !strings.Contains(out, "found no NVIDIA GPU") {
		t.Errorf("prepare without the GPU: exit %d, record %+v\n%s\n%s", code, got.Remote, out, stderr)
	}
	for _, n := range []string{"strata-vision-relay", "mmproj.gguf", "m-00001-of-00002.vocab.gguf", "strata-vision"} {
		if _, err := os.Stat(filepath.Join(remoteDir, n)); err != nil {
			t.Errorf("missing on the second PC: %s", n)
		}
	}
}

// The check: with "cwd": "." and a relative vision.mmproj, the
// CLI's `remote prepare` and the wizard's Prepare resolve the same file,
// against the Strata folder (as Strata does), not against the working
// folder of the program. Both name it before dialing, since it is missing.
func TestCLIAndWizardResolveVisionPathsAlike(t *testing.T) {
	isolate(t)
	root := t.TempDir()
	for _, d := range []string{"serve", "engine"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "serve", "server.py"), nil, 0o644)
	cfgPath := filepath.Join(root, "strata-test.json")
	os.WriteFile(cfgPath, []byte(`{"cwd": ".", "vision": {"mmproj": "models/mmproj.gguf", "model": "models/m-00001-of-00002.gguf", "gpu": false}}`), 0o644)
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	rm := &settings.Remote{Host: "192.0.2.1", User: "u", HostKey: "ssh-ed25519 AAAA", KeyFile: "k"}
	if err := (&settings.Settings{Remote: rm}).Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "models", "mmproj.gguf")

	_, cliErr, code := remoteCLI(t, "", "remote", "prepare", "--config", cfgPath)
	if code != 1 || !strings.Contains(cliErr, want+" is not a file") {
		t.Errorf("CLI: exit %d: %s (want it to name %s)", code, cliErr, want)
	}
	_, err := live.NewRemote().Prepare(context.Background(), rm, setupflow.Install{Root: root}, cfgPath, func(setupflow.Progress) {})
	if err == nil || !strings.Contains(err.Error(), want+" is not a file") {
		t.Errorf("wizard: %v (want it to name %s)", err, want)
	}
	for _, got := range []string{cliErr, err.Error()} {
		if strings.Contains(got, elsewhere) {
			t.Errorf("resolved against the working folder %s: %s", elsewhere, got)
		}
	}
}
