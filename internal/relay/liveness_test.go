package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// silentConn is a second PC whose link can be cut (nothing answers: no
// keepalive, no frame; a write blocks as in a full socket buffer) or whose
// agent can hang (it says nothing and reads nothing; its sshd still answers
// keepalives). Its agent beats every 100 ms while it has a picture (each
// "encoding" beat followed by a late "starting" one) and never answers one.
type silentConn struct {
	cut, hang chan struct{}
	working   chan struct{} // closed when the agent has had a picture's data (upload) or all of it (encode)
	upload    bool          // close working after the first data chunk, then read no more
	done      chan struct{}
	once      sync.Once
	mu        sync.Mutex
	closers   []io.Closer
}

func newSilentConn(upload bool) *silentConn {
	return &silentConn{cut: make(chan struct{}), hang: make(chan struct{}), working: make(chan struct{}), upload: upload, done: make(chan struct{})}
}

func (c *silentConn) stopped() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-c.cut:
		case <-c.hang:
		case <-c.done:
		}
		close(ch)
	}()
	return ch
}

func (c *silentConn) Start(string) (remote.Proc, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c.mu.Lock()
	c.closers = append(c.closers, inR, inW, outR, outW)
	c.mu.Unlock()
	stopped := c.stopped()
	go func() {
		fw := framing.NewWriter(outW)
		fw.WriteJSON(framing.Hello, framing.Info{Proto: framing.Version, OS: "linux", BeatMS: 100})
		fr := framing.NewReader(inR)
		var once sync.Once
		for {
			t, p, err := fr.Next()
			if err != nil {
				return
			}
			if t == framing.PictureData && c.upload {
				once.Do(func() { close(c.working) })
				<-stopped // reads no more: the relay's write waits
				return
			}
			if t != framing.PictureEnd {
				continue
			}
			id, _, _ := framing.SplitID(p)
			go func() {
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					fw.WriteJSON(framing.Beat, framing.BeatInfo{ID: id, Phase: framing.PhaseEncoding})
					// A late beat of the start that came before (the agent
					// does not wait for its beats to end): not a new start.
					fw.WriteJSON(framing.Beat, framing.BeatInfo{ID: id, Phase: framing.PhaseStarting})
					once.Do(func() { close(c.working) })
					select {
					case <-stopped:
						return
					case <-tick.C:
					}
				}
			}()
		}
	}()
	return remote.Proc{Stdin: inW, Stdout: outR, Stderr: strings.NewReader(""),
		Close: func() error { inW.Close(); outR.Close(); return nil }}, nil
}

// Alive answers at once unless the link is cut: then it waits, as a
// keepalive on a dead TCP connection does, until given up.
func (c *silentConn) Alive(ctx context.Context) error {
	select {
	case <-c.cut:
	default:
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return errors.New("the connection closed")
	}
}

func (c *silentConn) Done() <-chan struct{} { return c.done }

// Close ends everything on the connection, as closing its socket does.
func (c *silentConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.mu.Lock()
		for _, x := range c.closers {
			x.Close()
		}
		c.mu.Unlock()
	})
	return nil
}

// runRelay runs r as Strata does, past its READY line: requests go to in,
// replies come from out, Run's end to done.
func runRelay(t *testing.T, r *Relay) (in io.Writer, out *bufio.Reader, done chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done = make(chan error, 1)
	go func() { done <- r.Run(context.Background(), inR, outW); outW.Close() }()
	out = bufio.NewReader(outR)
	if l, _ := out.ReadString('\n'); l != "READY 8\n" {
		t.Fatalf("first line %q", l)
	}
	return inW, out, done
}

// sendUntilWorking asks the relay for a picture of size bytes and waits until
// conn's agent has it (conn.working).
func sendUntilWorking(t *testing.T, in io.Writer, conn *silentConn, size int) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, size)...), 0o600)
	io.WriteString(in, "ENC "+img+" "+strings.TrimSuffix(img, ".img")+".sve\n")
	select {
	case <-conn.working:
	case <-time.After(10 * time.Second):
		t.Fatal("the picture did not reach the agent")
	}
}

// TestLostLinkToldFromHungAgent: a picture whose link is cut (nothing
// answers) and one whose agent hangs (its link answers) are both given up
// within seconds, in the upload and in the encode, and each ERR says which
// it was; the next line is answered at once. Times are logged, not asserted
// (the bounds are bounds.LinkLost and bounds.HungAgent, 3 s; 10 s fails).
func TestLostLinkToldFromHungAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 3 s bounds")
	}
	cases := []struct {
		name   string
		upload bool
		cut    bool
		want   []string
	}{
		{"link cut during the encode", false, true, []string{"link to second PC pc-1 was lost while it was reading the picture", "check that PC and its network"}},
		{"link cut during the upload", true, true, []string{"link to second PC pc-1 was lost while the picture was sent to it"}},
		{"agent hung during the encode", false, false, []string{"the agent on second PC pc-1 stopped answering", "while it was reading the picture, though its link answers"}},
		{"agent hung during the upload", true, false, []string{"the agent on second PC pc-1 stopped taking the picture", "though its link answers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := newSilentConn(tc.upload)
			dial := func(context.Context, time.Duration) (remote.Conn, error) { return conn, nil }
			r := New(Options{Host: "pc-1", Dial: dial, AgentCommand: "agent", NEmbd: 8})
			inW, out, done := runRelay(t, r)
			size := 4000
			if tc.upload {
				size = 3 << 20 // more than the relay writes before the agent must read
			}
			sendUntilWorking(t, inW, conn, size)
			t0 := time.Now()
			if tc.cut {
				close(conn.cut)
			} else {
				close(conn.hang)
			}
			got := make(chan string, 1)
			go func() { l, _ := out.ReadString('\n'); got <- strings.TrimSpace(l) }()
			var l string
			select {
			case l = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no reply within 10 s")
			}
			t.Logf("ERR after %v: %s", time.Since(t0), l)
			for _, w := range tc.want {
				if !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, w) {
					t.Errorf("reply %q; want an ERR with %q", l, w)
				}
			}
			if tc.cut == strings.Contains(l, "stopped") {
				t.Errorf("reply %q names the wrong side", l)
			}
			t1 := time.Now()
			io.WriteString(inW, "\n")
			go func() { l, _ := out.ReadString('\n'); got <- strings.TrimSpace(l) }()
			select {
			case l = <-got:
				if !strings.HasPrefix(l, "ERR an empty request line") {
					t.Errorf("the next line got %q", l)
				}
				t.Logf("the next line answered in %v", time.Since(t1))
			case <-time.After(2 * time.Second):
				t.Fatal("the line after the ERR was not answered at once")
			}
			io.WriteString(inW, "QUIT\n")
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the relay did not end within 5 s of QUIT")
			}
			conn.Close()
		})
	}
}

// TestLinkCutBetweenPicturesClosesTheConnection: a kept connection whose
// link is cut while no picture is in flight is closed once nothing came from
// the second PC for ConnectTimeout (bounds.IdleLinkLost; 1 s here), checked
// every bounds.KeepaliveIdle, with one remote.disconnected event (the second
// PC is then known down: the background retry dials it, refused here).
func TestLinkCutBetweenPicturesClosesTheConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a keepalive interval")
	}
	conn := newSilentConn(false)
	var mu sync.Mutex
	var evs []events.Event
	dials := 0
	dial := func(context.Context, time.Duration) (remote.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if dials++; dials > 1 {
			return nil, errors.New("connection refused")
		}
		return conn, nil
	}
	r := New(Options{Host: "pc-1", Dial: dial, AgentCommand: "agent", NEmbd: 8, ConnectTimeout: time.Second,
		Report: func(e events.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }})
	inW, _, done := runRelay(t, r)
	// The connection the relay keeps between pictures (what the first
	// picture, or the background dial at start, opens).
	if err := r.link.connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	close(conn.cut)
	select {
	case <-conn.Done():
		t.Logf("link cut between pictures: connection closed after %v", time.Since(t0))
	case <-time.After(10 * time.Second):
		t.Fatal("the connection whose link was cut between pictures was not closed within 10 s")
	}
	mu.Lock()
	n := 0
	for _, e := range evs {
		if e.Kind == events.RemoteDisconnected && strings.Contains(e.Message, "did not answer within 1s") {
			n++
		}
	}
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d remote.disconnected events saying so; events: %v", n, evs)
	}
	io.WriteString(inW, "QUIT\n")
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestLostLinkWithWakeOnLANDoesNotWaitForAWake: with Wake-on-LAN set up, a
// link lost in the middle of a picture is still given up at the lost-link
// bound: no wake is sent and its wait (wait_s, a minute here) is not spent
// holding text; the next picture may wake a PC that is still down.
func TestLostLinkWithWakeOnLANDoesNotWaitForAWake(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 3 s bound")
	}
	conn := newSilentConn(false)
	var wakes atomic.Int32
	st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "pc-1", MAC: "aa:bb:cc:dd:ee:ff",
		Wake: &settings.Wake{Enabled: true, WaitS: 60}}}
	r := New(Options{
		Settings: func() (*settings.Settings, error) { return st, nil },
		Target: func(settings.Remote) Target {
			return Target{Host: "pc-1", AgentCommand: "agent", Dial: func(context.Context, time.Duration) (remote.Conn, error) { return conn, nil }}
		},
		Wake:  func(string, string, int) error { wakes.Add(1); return nil },
		NEmbd: 8,
	})
	inW, out, done := runRelay(t, r)
	sendUntilWorking(t, inW, conn, 4000)
	t0 := time.Now()
	close(conn.cut)
	got := make(chan string, 1)
	go func() { l, _ := out.ReadString('\n'); got <- strings.TrimSpace(l) }()
	select {
	case l := <-got:
		t.Logf("ERR after %v: %s", time.Since(t0), l)
		if !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, "was lost") {
			t.Errorf("reply %q; want the lost link's ERR", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no reply within 20 s: the relay waits for a wake")
	}
	if n := wakes.Load(); n != 0 {
		t.Errorf("%d Wake-on-LAN packets for a link lost mid-picture", n)
	}
	io.WriteString(inW, "QUIT\n")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not end within 5 s of QUIT")
	}
	conn.Close()
}
