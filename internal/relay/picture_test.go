//go:build linux

package relay

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/framing"
)

// Devices, FIFOs and folders are refused at once (a FIFO with no writer would
// block a plain open forever); a regular file over the cap too.
func TestOpenPictureRefusesNonRegularAndOversized(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.img")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.img")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Truncate(big, framing.MaxPicture+1) // sparse
	ok := filepath.Join(dir, "ok.img")
	os.WriteFile(ok, []byte("\xff\xd8\xff"), 0o600)
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file"},
		{fifo, "not a regular file"},
		{dir, "not a regular file"},
		{big, "at most 32 MiB"},
		{filepath.Join(dir, "missing.img"), "cannot read the picture"},
	} {
		done := make(chan string, 1)
		go func() {
			f, msg := openPicture(c.path)
			if f != nil {
				f.Close()
			}
			done <- msg
		}()
		select {
		case msg := <-done:
			if !strings.HasPrefix(msg, "ERR ") || !strings.Contains(msg, c.want) {
				t.Errorf("%s: %q, want an ERR with %q", c.path, msg, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: openPicture blocked", c.path)
		}
	}
	f, msg := openPicture(ok)
	if f == nil || msg != "" {
		t.Fatalf("a regular picture: %q", msg)
	}
	f.Close()
}

// frames decodes what sendPicture wrote.
func frames(t *testing.T, b []byte) (types string, body []byte, end byte) {
	t.Helper()
	r := framing.NewReader(bytes.NewReader(b))
	for {
		typ, p, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		types += string(typ)
		switch typ {
		case framing.PictureData:
			body = append(body, p...)
		case framing.PictureEnd:
			end = p[len(p)-1]
		}
	}
}

func TestSendPictureStreamsInChunks(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3, '\n'}, framing.ChunkSize/2+7) // 2 chunks and a bit
	var out bytes.Buffer
	refused, err := sendPicture(context.Background(), framing.NewWriter(&out), 9, bytes.NewReader(data))
	if refused != "" || err != nil {
		t.Fatalf("sendPicture: %q %v", refused, err)
	}
	types, body, end := frames(t, out.Bytes())
	if types != "BCCCZ" || !bytes.Equal(body, data) || end != framing.PictureComplete {
		t.Fatalf("frames %q, %d of %d bytes, end %d", types, len(body), len(data), end)
	}
}

// A file that grows past the cap while it is read is refused, and the agent
// is told to drop what it got; the relay never holds more than a chunk.
func TestSendPictureRefusesAFileThatGrowsPastTheCap(t *testing.T) {
	f, err := os.Open("/dev/zero") // endless, like a file that keeps growing
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	refused, err := sendPicture(context.Background(), framing.NewWriter(&out), 3, f)
	if err != nil || !strings.Contains(refused, "grew past 32 MiB") {
		t.Fatalf("sendPicture of an endless file: %q %v", refused, err)
	}
	_, body, end := frames(t, out.Bytes())
	if end != framing.PictureAborted || len(body) > framing.MaxPicture {
		t.Fatalf("end %d after %d bytes: want aborted within the cap", end, len(body))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.Reset()
	if refused, _ := sendPicture(ctx, framing.NewWriter(&out), 4, bytes.NewReader(nil)); !strings.Contains(refused, "stopping") {
		t.Fatalf("cancelled: %q", refused)
	}
	if _, _, end := frames(t, out.Bytes()); end != framing.PictureAborted {
		t.Fatal("a cancelled picture was not aborted")
	}
}
