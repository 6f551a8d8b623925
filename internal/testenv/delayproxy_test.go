package testenv

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes each connection until the client half-closes, then
// closes its side.
func echoServer(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	return l.Addr().String()
}

func TestDelayProxyDelaysBothWaysAndKeepsBytes(t *testing.T) {
	const oneWay = 60 * time.Millisecond
	addr := StartDelayProxy(t, echoServer(t), oneWay)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))

	// One small round trip crosses the proxy twice: it can never be quicker
	// than 2*oneWay (a lower bound holds however loaded the machine is).
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*oneWay {
		t.Errorf("round trip %v through a %v-each-way proxy", rtt, oneWay)
	}

	// Bulk data arrives intact and in order, and a half close is passed on
	// (the echo server ends only when it sees our EOF).
	data := make([]byte, 4<<20)
	rand.Read(data)
	go func() {
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes back, want the %d sent, unchanged", len(got), len(data))
	}
}

func BenchmarkDelayProxyThroughput(b *testing.B) {
	addr := StartDelayProxy(b, echoServer(b), 20*time.Millisecond)
	data := make([]byte, 16<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		go func() { c.Write(data); c.(*net.TCPConn).CloseWrite() }()
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		if n != int64(len(data)) {
			b.Fatalf("%d bytes back", n)
		}
	}
}
