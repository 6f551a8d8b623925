package pairing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

type noRecorder struct{ recorded int32 }

func (r *noRecorder) RecordPairing(context.Context, settings.Remote) error {
	atomic.AddInt32(&r.recorded, 1)
	return nil
}
func (r *noRecorder) RecordUnpair(context.Context) error { return nil }

// A PC found on the network whose ssh server shows another host key than
// it announced is refused before anything is sent: its pairing port never
// hears from us, and nothing is kept (not even a new key of ours).
func TestAnnouncedHostKeyMismatchIsRefusedBeforeAnythingIsSentIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s := testenv.StartSSHD(t, testenv.SSHDOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var heard int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			atomic.AddInt32(&heard, 1)
			c.Close()
		}
	}()
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(pub)
	rec := &noRecorder{}
	code, _ := lend.NewCode()
	dir := t.TempDir()
	_, err = PairWithCode(context.Background(), CodeOptions{Code: code, Recorder: rec, KeyFile: filepath.Join(dir, "key"), KnownHosts: filepath.Join(dir, "known_hosts"),
		Targets: []CodeTarget{{Name: "laptop", Host: s.Host, SSHPort: s.Port, PairPort: ln.Addr().(*net.TCPAddr).Port, HostKey: ssh.FingerprintSHA256(other)}}})
	if err == nil || !strings.Contains(err.Error(), "another host key") || !strings.Contains(err.Error(), "nothing sent") {
		t.Fatalf("PairWithCode = %v", err)
	}
	if n := atomic.LoadInt32(&heard); n != 0 || rec.recorded != 0 {
		t.Fatalf("the pairing port heard %d connections, %d records", n, rec.recorded)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("left behind: %v", matches)
	}
}
