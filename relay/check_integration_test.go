//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// TestStrataDrivesTheBuiltRelayIntegration is the check, scripted: the built
// strata-vision-relay started exactly as Strata's server starts an encoder
// ([exe, --mmproj M, --model X, ...], the config's env added, stderr appended
// to the engine log), driven line by line as the server drives it.
func TestStrataDrivesTheBuiltRelayIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and starts a real sshd")
	}
	relayBin, standinBin := builtBinaries(t)
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{})
	sshd.Stop() // the second PC is off when Strata starts

	// The server's side: its mmproj and model shard 1, its config's folder.
	root := t.TempDir()
	mmproj, model := filepath.Join(root, "mmproj-BF16.gguf"), filepath.Join(root, "model-00001-of-00003.gguf")
	fakeencoder.WriteMmproj(mmproj, 32)
	fakeencoder.WriteModel(model, 20)
	// The second PC's folder, as `remote prepare` leaves it.
	remoteDir := t.TempDir()
	rm, rmodel := remote.RemoteFiles(mmproj, model)
	cp := func(from, to string, mode os.FileMode) {
		if err := testenv.CopyFile(from, to, mode); err != nil {
			t.Fatal(err)
		}
	}
	cp(mmproj, filepath.Join(remoteDir, rm), 0o644)
	cp(model, filepath.Join(remoteDir, rmodel), 0o644)
	cp(relayBin, filepath.Join(remoteDir, "strata-vision-relay"), 0o755)
	cp(standinBin, filepath.Join(remoteDir, "strata-vision"), 0o755)
	st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{
		Host: sshd.Host, Port: sshd.Port, User: sshd.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostSigner.PublicKey()))),
		KeyFile:   sshd.ClientKeyFile,
		RemoteDir: remoteDir,
		// As prepare records a PC without an NVIDIA GPU, 6 image tokens chosen.
		NoGPU: true, MaxTokens: 6,
	}}
	settingsFile := filepath.Join(t.TempDir(), "settings.json")
	if err := st.Save(settingsFile); err != nil {
		t.Fatal(err)
	}

	engineLog, _ := os.Create(filepath.Join(root, "strata-test.log"))
	defer engineLog.Close()
	cmd := exec.Command(relayBin, "--mmproj", mmproj, "--model", model, "--max-tokens", "6")
	cmd.Dir = root
	home := t.TempDir()
	svc := startFakeService(t, home)
	cmd.Env = append(os.Environ(), "STRATA_COMPANION_SETTINGS="+settingsFile, "STRATA_COMPANION_HOME="+home) // the config's `env`
	cmd.Stderr = engineLog
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	readLine := func(within time.Duration) (string, time.Duration) {
		start := time.Now()
		got := make(chan string, 1)
		go func() { l, _ := out.ReadString('\n'); got <- strings.TrimSpace(l) }()
		select {
		case l := <-got:
			return l, time.Since(start)
		case <-time.After(within):
			t.Fatalf("no line within %s: the relay hung", within)
			return "", 0
		}
	}
	// The server reads one line and checks only that it begins with READY.
	line, _ := readLine(30 * time.Second)
	ready := time.Since(t0)
	if line != "READY 32" {
		t.Fatalf("first line %q", line)
	}
	t.Logf("READY %v after the process started, with the second PC off", ready)

	tmp := t.TempDir() // the server's strata-vision-XXXX folder
	send := func(i int) (string, []byte, string, time.Duration) {
		data := append([]byte("\xff\xd8\xff\xe0JFIF"), bytes.Repeat([]byte{byte(i)}, 4000+i)...)
		name := fmt.Sprintf("%032x", i)
		img, sve := filepath.Join(tmp, name+".img"), filepath.Join(tmp, name+".sve")
		os.WriteFile(img, data, 0o600)
		fmt.Fprintf(stdin, "ENC %s %s\n", img, sve)
		l, d := readLine(60 * time.Second)
		os.Remove(img) // deleted as soon as the reply line arrives
		return l, data, sve, d
	}
	l, _, _, d := send(1)
	if !strings.HasPrefix(l, "ERR second PC "+sshd.Host) || !strings.Contains(l, "text still works") {
		t.Fatalf("ENC with the second PC off: %q", l)
	}
	t.Logf("ERR after %v with the second PC off: %s", d, l)

	sshd.Start()
	// A refusal is quick to find: not kept as known down, so the very next
	// picture goes there, and says it answers again.
	for i := 2; i < 5; i++ {
		l, data, sve, d := send(i)
		if !strings.HasPrefix(l, "OK 6 2 3 ") {
			log, _ := os.ReadFile(engineLog.Name())
			t.Fatalf("ENC after the second PC came back: %q\n%s", l, log)
		}
		if b, _ := os.ReadFile(sve); !bytes.Equal(b, fakeencoder.SVE(data, 6, 32)) {
			t.Fatalf("picture %d: the .sve is not byte-identical", i)
		}
		t.Logf("OK after %v", d)
	}
	svc.waitFor(t, events.RemoteReachable, 1, 10*time.Second)
	sshd.Stop()
	l, _, _, d = send(9)
	if !strings.HasPrefix(l, "ERR ") {
		t.Fatalf("ENC with sshd stopped: %q", l)
	}
	t.Logf("ERR after %v with sshd stopped: %s", d, l)
	sshd.Start()
	// The connection closed mid-picture, and the dial after it was refused
	// (quick to find: not kept as known down): the next picture reconnects.
	if l, _, _, _ := send(10); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("ENC after sshd restarted: %q", l)
	}

	// Shutdown as the server does it: QUIT, then up to 10 s.
	io.WriteString(stdin, "QUIT\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("relay exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not exit within 10 s of QUIT")
	}
	// The events went to the service, none to the engine log.
	kinds := map[events.Kind]bool{}
	for _, e := range svc.all() {
		kinds[e.Kind] = true
	}
	for _, k := range []events.Kind{events.RemoteUnreachable, events.RemoteConnected, events.RemoteDisconnected, events.PictureEncoded} {
		if !kinds[k] {
			t.Errorf("the service got no %s event: %v", k, svc.all())
		}
	}
	log, _ := os.ReadFile(engineLog.Name())
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "strata") || strings.HasPrefix(l, "ERR") {
			t.Errorf("engine log line from the relay: %q", l)
		}
	}
	// n_embd goes to the service (which records it), not into the settings.
	if svc.nEmbd != 32 {
		t.Errorf("n_embd reported = %d, want 32", svc.nEmbd)
	}
	if s, _ := settings.Load(settingsFile); s.Remote.NEmbd != 0 {
		t.Errorf("the relay wrote n_embd %d into the settings", s.Remote.NEmbd)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := 0
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if exe, _ := os.Readlink(d + "/exe"); strings.HasPrefix(exe, remoteDir) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the second PC still run after QUIT", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
