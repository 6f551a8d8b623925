package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// Strata runs as the install's owner, so the relay does too: it still
// reads pictures on the second PC (a real sshd) with the companion's key,
// which the service lets that account read and no other, and it reports
// them with the relay's own token, which that account may read.
func TestRemotePicturesWhenStrataRunsAsTheOwnerIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay, starts a real sshd and the service")
	}
	testenv.Root(t)
	ua := testenv.NewUser(t)
	a := accountCred(t, ua)

	// The service, and the relay beside it, in a folder every account may
	// read (as /usr/bin is).
	binDir := t.TempDir()
	relayBin, encoderBin := e2eBuild(t, binDir)
	self, _ := os.Executable()
	svc := filepath.Join(binDir, "strata-service")
	testenv.Copy(t, self, svc, 0o755)
	for _, d := range []string{binDir, filepath.Dir(binDir)} {
		os.Chmod(d, 0o755)
	}

	models := t.TempDir()
	mmproj, model := filepath.Join(models, "mmproj-BF16.gguf"), filepath.Join(models, "model-00001-of-00003.gguf")
	fakeencoder.WriteMmproj(mmproj, 32)
	fakeencoder.WriteModel(model, 20)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Extra: map[string]any{
		"args":   []string{"-m", "model.gguf", "--vision", "--vram-reserve-mib", "700"},
		"vision": map[string]any{"exe": "engine/strata-vision", "mmproj": mmproj, "model": model, "gpu": true, "max_tokens": 6},
	}})
	localEncoder := filepath.Join(r.Dir, "engine", "strata-vision")
	testenv.Copy(t, encoderBin, localEncoder, 0o755)
	chownTree(t, r.Dir, a)
	chownTree(t, models, a)

	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{})
	remoteDir := t.TempDir()
	rm, rmodel := remote.RemoteFiles(mmproj, model)
	testenv.Copy(t, mmproj, filepath.Join(remoteDir, rm), 0o755)
	testenv.Copy(t, model, filepath.Join(remoteDir, rmodel), 0o755)
	testenv.Copy(t, relayBin, filepath.Join(remoteDir, "strata-vision-relay"), 0o755)
	testenv.Copy(t, encoderBin, filepath.Join(remoteDir, "strata-vision"), 0o755)

	// The companion's own key (what pairing makes: root's, 0600, in the
	// 0700 secrets folder) and the settings naming the second PC.
	home := t.TempDir()
	t.Setenv(locations.EnvHome, home)
	os.Chmod(home, 0o755)
	os.Chmod(filepath.Dir(home), 0o755)
	secrets, err := locations.EnsureDir(locations.SecretsDir)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(sshd.ClientKeyFile)
	if err := os.WriteFile(locations.RelayKeyFile(), key, 0o600); err != nil {
		t.Fatal(err)
	}
	st := &settings.Settings{Vision: settings.PlacementGPU, LocalEncoder: localEncoder, Remote: &settings.Remote{
		Host: sshd.Host, Port: sshd.Port, User: sshd.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostSigner.PublicKey()))),
		KeyFile:   locations.RelayKeyFile(),
		RemoteDir: remoteDir,
	}}
	if err := st.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}

	out := &syncBuf{}
	cmd := exec.Command(svc, "run", "--foreground", "--strata-root", r.Dir, "--config", r.Config, "--stop-timeout", "5s")
	cmd.Env = append(os.Environ(), envChildCLI+"=1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	var c *controlapi.Client
	for deadline := time.Now().Add(60 * time.Second); c == nil; time.Sleep(20 * time.Millisecond) {
		if cl, err := controlapi.NewClient(); err == nil {
			if _, err := cl.State(context.Background()); err == nil {
				c = cl
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service did not answer:\n%s", out)
		}
	}
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)

	if _, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: "remote"}); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerReady)
	snap, _ := c.State(ctx)
	relayExe := filepath.Join(binDir, "strata-vision-relay")
	relayPID := relayOf(t, snap.Server.PID, relayExe)
	if uid := uidOf(t, relayPID); uid != int(a.Uid) {
		t.Fatalf("the relay runs as uid %d, want the owner's %d", uid, a.Uid)
	}
	reply, code, msg := standinPicture(t, r.Port, 1)
	if code != 200 || !strings.HasPrefix(reply, "OK ") {
		t.Fatalf("a picture with Strata as the owner: %d %q %q\n%s", code, reply, msg, out)
	}
	var pic events.Event
	for _, e := range follow(t, c, &since, events.PictureEncoded) {
		if e.Kind == events.PictureEncoded {
			pic = e
		}
	}
	if w := events.Get[events.PictureEncodedDetails](pic).Where; w != "remote" {
		t.Fatalf("the picture was read %q, want remote (%+v)\n%s", w, pic, out)
	}
	// The key: the owner's to read now, nobody else's.
	kst, _ := os.Stat(locations.RelayKeyFile())
	if kst.Mode().Perm() != 0o600 {
		t.Fatalf("the key is %o", kst.Mode().Perm())
	}
	other := exec.Command("cat", locations.RelayKeyFile())
	other.SysProcAttr = nobodyAttr()
	if other.Run() == nil {
		t.Fatal("another account read the companion's key")
	}
	if st, _ := os.Stat(secrets); st.Mode().Perm()&0o044 != 0 {
		t.Fatalf("the secrets folder is listable: %o", st.Mode().Perm())
	}
}
