package relay

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/remote"
)

// forgingConn is a second PC whose "agent" answers each picture with the
// reply lines it is given, over the real frame protocol: what an sshd the
// caller picked (H3) could send.
type forgingConn struct {
	replies []string // one per picture, in order
	nEmbd   int
	done    chan struct{}
	once    sync.Once
}

func (c *forgingConn) Start(string) (remote.Proc, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer outW.Close()
		fw := framing.NewWriter(outW)
		fw.WriteJSON(framing.Hello, framing.Info{Proto: framing.Version, OS: "linux", PID: 1, NEmbd: c.nEmbd})
		fr := framing.NewReader(inR)
		n := 0
		for {
			t, p, err := fr.Next()
			if err != nil {
				return
			}
			switch t {
			case framing.Ping:
				fw.Write(framing.Pong, p)
			case framing.PictureEnd:
				id, _, _ := framing.SplitID(p)
				line := c.replies[n]
				n++
				fw.Write(framing.Result, framing.ResultHeader(id, line), sve(3, c.nEmbd))
			}
		}
	}()
	return remote.Proc{Stdin: inW, Stdout: outR, Stderr: strings.NewReader(""),
		Close: func() error { inW.Close(); outR.Close(); return nil }}, nil
}
func (c *forgingConn) Alive(context.Context) error { return nil }
func (c *forgingConn) Done() <-chan struct{}       { return c.done }
func (c *forgingConn) Close() error                { c.once.Do(func() { close(c.done) }); return nil }

// sve is a well-formed .sve of n tokens (1x3 patches).
func sve(n, nEmbd int) []byte {
	b := make([]byte, 20+n*nEmbd*4)
	for i, v := range []uint32{sveMagic, uint32(n), 1, 3, uint32(nEmbd)} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// H3: whatever the second PC answers, Strata gets exactly one validated
// "OK n nx ny ms" line per picture (its n, nx, ny those of the .sve that
// came with it), or one ERR line. The finding: a two-line result made the
// next picture get the injected line.
func TestExactlyOneValidatedLinePerPicture(t *testing.T) {
	const nEmbd = 8
	conn := &forgingConn{nEmbd: nEmbd, done: make(chan struct{}), replies: []string{
		"OK 3 1 3 5\nOK 999 9 9 9", // two lines: the second must never reach Strata
		"OK 3 1 3 7",               // good
		"OK 64 8 8 5",              // says more tokens than the .sve holds
		"OK 3 1 3",                 // not four numbers
		"READY 8",                  // not a result at all
		"OK 3 1 3 6",               // good again: the session still lines up
	}}
	r := New(Options{Host: "pc2", NEmbd: nEmbd, AgentCommand: "agent",
		Dial: func(context.Context, time.Duration) (remote.Conn, error) { return conn, nil }})
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- r.Run(context.Background(), inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			if lines.Scan() {
				got <- lines.Text()
			} else {
				got <- "(end)"
			}
		}()
		select {
		case l := <-got:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no reply line within 20 s")
			return ""
		}
	}
	if l := next(); l != "READY 8" {
		t.Fatalf("first line %q", l)
	}
	want := []string{"ERR ", "OK 3 1 3 7", "ERR ", "ERR ", "ERR ", "OK 3 1 3 6"}
	for i, w := range want {
		img := filepath.Join(dir, "p.img")
		os.WriteFile(img, []byte("picture"), 0o600)
		out := filepath.Join(dir, "p"+string(rune('a'+i))+".sve")
		io.WriteString(inW, "ENC "+img+" "+out+"\n")
		l := next()
		if !strings.HasPrefix(l, w) || (w != "ERR " && l != w) {
			t.Errorf("picture %d (%q): Strata got %q, want %q...", i, conn.replies[i], l, w)
		}
		_, err := os.Stat(out)
		if ok := strings.HasPrefix(l, "OK "); ok != (err == nil) {
			t.Errorf("picture %d: reply %q but the .sve exists: %v", i, l, err == nil)
		}
	}
	io.WriteString(inW, "QUIT\n")
	if l := next(); l != "(end)" {
		t.Errorf("after QUIT Strata got %q", l)
	}
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end after QUIT")
	}
}
