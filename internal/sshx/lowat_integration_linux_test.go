package sshx

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// The promise the relay makes for a result it is reading: the announced
// bytes less what x/crypto/ssh may already have read into the channel
// (channelReadAhead). Through a real sshd, with the reader late enough that
// x/crypto has filled the whole window before the promise is made: had it
// read more than channelReadAhead (a newer x/crypto with a larger window),
// the promise would outrun the bytes still to come and the guard would fire.
func TestExpectIncomingOverARealSSHDIntegration(t *testing.T) {
	s := startSSHD(t)
	ep := endpointOf(t, s, s.User)
	kh := pinned(t, s, ep)
	const size = 12 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*131 + i>>16)
	}
	file := filepath.Join(t.TempDir(), "stream")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	signer := s.ClientSigner
	c, err := DialClient(context.Background(), Config{Endpoint: ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: kh.Callback, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.pc == nil {
		t.Fatal("the connection is not read through packetConn")
	}
	// A promise that outran the stream waits at its end until the guard;
	// a loaded machine's scheduling stall must not look like one.
	c.pc.guard.Store(int64(patientGuard))
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("cat " + file); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // x/crypto reads up to its window meanwhile
	c.ExpectIncoming(size)
	var got bytes.Buffer
	within(t, "reading the stream", 60*time.Second, func() {
		if _, err := io.Copy(&got, out); err != nil {
			t.Error(err)
		}
	})
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("got %d bytes, not the %d sent", got.Len(), size)
	}
	if f := c.pc.guardFired.Load(); f != 0 {
		t.Errorf("the guard fired %d times: the promise outran the stream (x/crypto read ahead more than %d bytes?)", f, channelReadAhead)
	}
	if p := c.pc.promised.Load(); p != 0 {
		t.Errorf("%d promised bytes never came", p)
	}
}
