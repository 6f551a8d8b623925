//go:build linux

package relay

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// M3: a hostile key_file. /dev/zero was read without bound (out of memory);
// a FIFO hung the picture until QUIT, and then QUIT and SIGTERM were ignored.
// Each is refused at once with one ERR line, and QUIT still ends the relay.
func TestHostileKeyFileIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "key.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.key")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, 1<<30) // sparse: a GiB "key"
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	hk, _ := ssh.NewPublicKey(pub)
	img := filepath.Join(dir, "p.img")
	os.WriteFile(img, []byte("picture"), 0o600)
	for _, c := range []struct{ key, want string }{
		{"/dev/zero", "not a regular file"},
		{fifo, "not a regular file"},
		{dir, "not a regular file"},
		{big, "more than any private key"},
	} {
		rm := settings.Remote{Host: "127.0.0.1", Port: 1, User: "u", KeyFile: c.key, OS: "linux",
			HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk)))}
		st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &rm}
		r := New(Options{Host: rm.Host, Dial: remote.SSHDialer(rm), AgentCommand: "agent",
			Settings: func() (*settings.Settings, error) { return st, nil },
			Target: func(rm settings.Remote) Target {
				return Target{Host: rm.Host, Dial: remote.SSHDialer(rm), AgentCommand: "agent", OS: "linux"}
			}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ran := make(chan error, 1)
		go func() { ran <- r.Run(context.Background(), inR, outW); outW.Close() }()
		lines := make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		next := func() string {
			select {
			case l := <-lines:
				return l
			case <-time.After(15 * time.Second):
				t.Fatalf("%s: no line within 15 s", c.key)
				return ""
			}
		}
		next() // READY
		t0 := time.Now()
		io.WriteString(inW, "ENC "+img+" "+img+".sve\n")
		if l := next(); !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, c.want) {
			t.Errorf("%s: %q, want an ERR with %q", c.key, l, c.want)
		}
		t.Logf("%s: refused in %s", c.key, time.Since(t0).Round(time.Millisecond))
		io.WriteString(inW, "QUIT\n")
		select {
		case <-ran:
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: QUIT did not end the relay", c.key)
		}
		inW.Close()
	}
}
