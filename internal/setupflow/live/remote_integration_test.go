//go:build linux

package live_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// Against a real OpenSSH server: the probe asks about the unknown host key
// (and a "no" sends nothing), pairing installs the companion's key
// agent-only (the line forces the agent's gate, and this PC's encoder build
// is allowed), prepare works through that key (it copies the encoder and
// sees READY), and a Cancel before Apply takes the line off the second PC
// again through the gate, with the companion's key alone, and leaves no
// local key or pin.
func TestSecondPCRealSSHDIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd")
	}
	t.Parallel() // the slowest test here (ssh logins); the others use t.Setenv and run meanwhile
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte("#!/bin/sh\necho '0, NVIDIA GeForce RTX 3060, 12288, 498, 11790, 581.57, 8.6, Disabled'\n"), 0o755)
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{bin}})
	authBefore, _ := os.ReadFile(sshd.AuthorizedKeysFile)

	home := filepath.Join(dir, "companion")
	os.MkdirAll(home, 0o700)
	// A Strata install here whose engine folder holds this PC's encoder
	// (the stand-in), with a vision block naming real GGUF files.
	agent := testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Name: "strata-vision-relay"})
	enc := testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	root := fakestrata.NewRoot(t, fakestrata.RootOptions{Extra: map[string]any{
		"vision": map[string]any{"exe": "engine/strata-vision", "mmproj": "mmproj-BF16.gguf", "model": "model-00001-of-00002.gguf", "max_tokens": 4},
	}})
	if b, err := os.ReadFile(enc); err != nil || os.WriteFile(filepath.Join(root.Dir, "engine", "strata-vision"), b, 0o755) != nil {
		t.Fatalf("copying the stand-in encoder: %v", err)
	}
	if err := fakeencoder.WriteMmproj(filepath.Join(root.Dir, "mmproj-BF16.gguf"), 64); err != nil {
		t.Fatal(err)
	}
	if err := fakeencoder.WriteModel(filepath.Join(root.Dir, "model-00001-of-00002.gguf"), 20); err != nil {
		t.Fatal(err)
	}
	pcDir := filepath.Join(dir, "second-pc")
	r := &live.Remote{SSHConfig: filepath.Join(dir, "none"), KnownHostsFile: filepath.Join(home, "known_hosts"),
		KeyFile: filepath.Join(home, "relay_ed25519"), AuthorizedKeysFile: sshd.AuthorizedKeysFile,
		IdentityFiles: []string{sshd.ClientKeyFile}, NoAgent: true, RemoteDir: pcDir,
		AgentBinary: func(string, string) (string, error) { return agent, nil },
		Link:        linkprobe.Options{Pings: 3, TransferBytes: 256 << 10}}
	w := demo.NewWorld(root.Dir)
	var asked []setupflow.HostKey
	answer := false
	d := w.Deps(func(_ context.Context, k setupflow.HostKey) bool { asked = append(asked, k); return answer })
	d.Remote = r
	d.Finder = live.Finder{SettingsPath: filepath.Join(home, "settings.json"), Root: root.Dir, Config: root.Config}
	ctx := context.Background()
	f, err := setupflow.New(ctx, d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Next()
	f.Find.Search(ctx)
	f.Next()
	f.Choice.Probe(ctx, nil)
	f.Next()
	f.Choice.Choose(settings.PlacementRemote, nil)
	f.Next()
	f.SecondPC.SetTarget(setupflow.RemoteTarget{Address: sshd.Addr(), User: sshd.User, UseAgent: true})

	if _, err := f.SecondPC.Probe(ctx, nil); !errors.Is(err, setupflow.ErrHostKeyRejected) {
		t.Fatalf("probe with the key refused: %v", err)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0].Fingerprint, "SHA256:") {
		t.Fatalf("asked %+v", asked)
	}
	answer = true
	t0 := time.Now()
	rep, err := f.SecondPC.Probe(ctx, nil)
	t.Logf("probe %s", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OS != "linux" || rep.GPUName() != "NVIDIA GeForce RTX 3060" || rep.FreeVRAMMiB() != 11790 || rep.RTTms <= 0 || rep.DownMBps <= 0 {
		t.Errorf("report %+v", rep)
	}
	if _, err := os.Stat(r.KnownHostsFile); err == nil {
		t.Error("the probe pinned the host key (only pairing may)")
	}
	t0 = time.Now()
	rm, err := f.SecondPC.Pair(ctx, nil)
	t.Logf("pair %s", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 {
		t.Errorf("pairing asked about the same key again (%d questions)", len(asked))
	}
	if rm.HostKey == "" || rm.KeyFile != r.KeyFile {
		t.Errorf("paired %+v", rm)
	}
	auth, _ := os.ReadFile(sshd.AuthorizedKeysFile)
	if want := `restrict,command="` + filepath.Join(pcDir, "strata-vision-relay") + ` gate --allow `; !strings.Contains(string(auth), want) ||
		!strings.Contains(string(auth), " --keys "+sshd.AuthorizedKeysFile+`" ssh-ed25519 `) {
		t.Errorf("authorized_keys after the wizard's pairing:\n%s\nwant an agent-only line (%s...)", auth, want)
	}
	t0 = time.Now()
	if err := f.SecondPC.Prepare(ctx, nil); err != nil {
		t.Fatalf("prepare through the agent-only key: %v", err)
	}
	t.Logf("prepare %s", time.Since(t0))
	if rm, _, prepared := f.SecondPC.State(); !prepared || rm.NEmbd != 64 || rm.EncoderPath != "strata-vision" {
		t.Errorf("after prepare: %+v (prepared %v)", rm, prepared)
	}
	if _, err := os.Stat(filepath.Join(home, "settings.json")); err == nil {
		t.Error("pairing wrote the companion settings before Apply")
	}

	t0 = time.Now()
	res := f.Cancel()
	t.Logf("cancel %s", time.Since(t0))
	if res.Changed {
		t.Errorf("Cancel: %v", res.Messages)
	}
	if auth, _ := os.ReadFile(sshd.AuthorizedKeysFile); !bytes.Equal(auth, authBefore) {
		t.Errorf("authorized_keys after Cancel:\n%s\nbefore:\n%s", auth, authBefore)
	}
	for _, p := range []string{r.KeyFile, r.KnownHostsFile} {
		if b, err := os.ReadFile(p); err == nil && len(bytes.TrimSpace(b)) > 0 {
			t.Errorf("%s left after Cancel", p)
		}
	}
}
