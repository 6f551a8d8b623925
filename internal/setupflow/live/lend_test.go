package live_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// Find asks lend.Browse (here a stand-in: no multicast on this machine's
// own network) for about 3 s.
func TestFindBrowsesForAFewSeconds(t *testing.T) {
	var waited time.Duration
	want := []lend.Announcement{{Name: "gaming-laptop", Host: "192.168.1.20", Port: 22, PairPort: 7390}}
	r := &live.Remote{Browse: func(_ context.Context, wait time.Duration) ([]lend.Announcement, error) {
		waited = wait
		return want, nil
	}}
	got, err := r.Find(context.Background())
	if err != nil || len(got) != 1 || got[0].Name != "gaming-laptop" {
		t.Fatalf("Find: %+v %v", got, err)
	}
	if waited != live.FindWait || live.FindWait != 3*time.Second {
		t.Errorf("browsed for %s", waited)
	}
}

// A wrong code, against a real lender's exchange on this machine's
// loopback: the lender's refusal comes back as it is, and nothing is left
// here (no key, no pin).
func TestPairWithCodeRefusedLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	book := lend.NewMemBook("HXK49TQM", time.Minute)
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		served <- lend.Serve(context.Background(), c, book, func(context.Context, lend.Request) (*lend.Grant, error) {
			return nil, errors.New("granted on a wrong code")
		})
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	r := &live.Remote{KeyFile: filepath.Join(dir, "relay_ed25519"), KnownHostsFile: filepath.Join(dir, "known_hosts"), CodeTimeout: 10 * time.Second}
	var steps []string
	_, err = r.PairWithCode(context.Background(), setupflow.CodePairing{
		Target: pairing.CodeTarget{Name: "127.0.0.1", Host: "127.0.0.1", PairPort: port}, Code: "ABCDEFGH"},
		func(p setupflow.Progress) { steps = append(steps, p.Text) })
	var refused *lend.RefusedError
	if !errors.As(err, &refused) || refused.Kind != lend.RefusedWrong || !strings.Contains(err.Error(), "get a new code") {
		t.Fatalf("a wrong code: %v", err)
	}
	if len(steps) == 0 || steps[0] != "Pairing with 127.0.0.1 using the code" {
		t.Errorf("progress %q", steps)
	}
	testenv.Receive(t, served, 10*time.Second, "the lender's exchange to end")
	for _, f := range []string{r.KeyFile, r.KnownHostsFile} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is left after a refused pairing: %v", f, err)
		}
	}
}
