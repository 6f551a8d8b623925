package sshx

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair is a connected loopback pair: the client side wrapped as Dial
// wraps it (after the handshake), the server side plain.
// patientGuard replaces lowatGuard where a test asserts the guard never
// fired: on a loaded 2-core CI machine sshd or the writer can be descheduled
// for longer than 250 ms, which the product rightly treats as "stop
// waiting for a batch" but which is no broken promise.
const patientGuard = 20 * time.Second

func tcpPair(t *testing.T) (*packetConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	pc, conn := newPacketConn(c)
	if pc == nil || conn != net.Conn(pc) {
		t.Fatal("a TCP connection was not wrapped")
	}
	pc.start()
	t.Cleanup(func() { pc.Close(); srv.Close() })
	return pc, srv
}

func within(t *testing.T, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %s", what, d)
	}
}

func lowat(t *testing.T, pc *packetConn) int {
	var v int
	pc.raw.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT) })
	return v
}

// x/crypto/ssh's way of reading: a 4 KiB bufio.Reader, the length, then
// the rest of the packet in one ReadFull. A packet that trickles in arrives
// whole and right; a small message after it is not held back waiting for
// a low-water mark meant for a large one.
func TestPacketConnDeliversTricklingPacketsAndSmallMessages(t *testing.T) {
	pc, srv := tcpPair(t)
	body := bytes.Repeat([]byte("0123456789abcdef"), 30000/16)
	go func() {
		srv.Write([]byte{0, 0, 0x75, 0x30}) // 30000
		for off := 0; off < len(body); off += 3000 {
			time.Sleep(2 * time.Millisecond)
			srv.Write(body[off : off+3000])
		}
		time.Sleep(20 * time.Millisecond)
		srv.Write([]byte("tiny"))
	}()
	br := bufio.NewReader(pc)
	within(t, "reading the packet and the small message", 10*time.Second, func() {
		var hd [4]byte
		if _, err := io.ReadFull(br, hd[:]); err != nil {
			t.Error(err)
			return
		}
		got := make([]byte, 30000)
		if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, body) {
			t.Errorf("packet body differs (%v)", err)
			return
		}
		tiny := make([]byte, 4)
		if _, err := io.ReadFull(br, tiny); err != nil || string(tiny) != "tiny" {
			t.Errorf("small message %q, %v", tiny, err)
		}
	})
	if v := lowat(t, pc); v != 1 {
		t.Errorf("SO_RCVLOWAT after waiting for a small read is %d, want 1", v)
	}
}

// While a large read waits, the socket asks for the rest of it (one
// wake-up instead of one per segment).
func TestPacketConnWaitsForTheRestOfALargeRead(t *testing.T) {
	pc, srv := tcpPair(t)
	srv.Write(make([]byte, 1000))
	got := make(chan int, 1)
	go func() {
		n, _ := io.ReadFull(pc, make([]byte, 20000))
		got <- n
	}()
	// The first 1000 bytes are read at once; the reader then waits for 19000.
	deadline := time.Now().Add(10 * time.Second)
	for lowat(t, pc) != 19000 {
		if time.Now().After(deadline) {
			t.Fatalf("SO_RCVLOWAT while waiting for 19000 more bytes: %d", lowat(t, pc))
		}
		time.Sleep(time.Millisecond)
	}
	srv.Write(make([]byte, 19000))
	select {
	case n := <-got:
		if n != 20000 {
			t.Fatalf("read %d bytes", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the rest arrived but the read did not end")
	}
}

// A read that asks for more than will ever come (an x/crypto that read
// ahead) is not left waiting: the guard drops the low-water mark.
func TestPacketConnGuardEndsAReadForBytesThatNeverCome(t *testing.T) {
	pc, srv := tcpPair(t)
	go func() { time.Sleep(50 * time.Millisecond); srv.Write([]byte("only ten!!")) }()
	within(t, "a 64 KiB read with 10 bytes sent", 10*time.Second, func() {
		buf := make([]byte, 64<<10)
		n, err := pc.Read(buf)
		if err != nil || string(buf[:n]) != "only ten!!" {
			t.Errorf("read %q, %v", buf[:n], err)
		}
		// Nothing more is sent: the next large read must still end when
		// more comes, however little.
		go func() { time.Sleep(2 * lowatGuard); srv.Write([]byte("more")) }()
		n, err = pc.Read(buf)
		if err != nil || string(buf[:n]) != "more" {
			t.Errorf("second read %q, %v", buf[:n], err)
		}
	})
}

func TestPacketConnEOFDeadlineAndLargeWrites(t *testing.T) {
	pc, srv := tcpPair(t)
	// A write far larger than the socket buffers, to a slow reader: all of
	// it arrives, in order.
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	recv := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 64<<10)
		for b.Len() < len(data) {
			n, err := srv.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
			if b.Len() < 1<<20 {
				time.Sleep(time.Millisecond)
			}
		}
		recv <- b.Bytes()
	}()
	within(t, "an 8 MiB write", 30*time.Second, func() {
		if n, err := pc.Write(data); n != len(data) || err != nil {
			t.Errorf("wrote %d, %v", n, err)
		}
	})
	if got := <-recv; !bytes.Equal(got, data) {
		t.Fatalf("the peer got %d bytes, not the 8 MiB written", len(got))
	}
	// A deadline set by the caller still ends a read (the handshake's).
	pc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := pc.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	pc.SetReadDeadline(time.Time{})
	// The peer closing is io.EOF.
	srv.Close()
	within(t, "reading after the peer closed", 10*time.Second, func() {
		if _, err := pc.Read(make([]byte, 10)); err != io.EOF {
			t.Errorf("after the peer closed: %v, want io.EOF", err)
		}
	})
}

// While bytes are promised, even a small read (the next packet's length)
// waits for a batch of them; what is read comes off the promise, and once
// it is kept, small reads wait for one byte again.
func TestPacketConnReadsAPromiseInBatches(t *testing.T) {
	pc, srv := tcpPair(t)
	pc.guard.Store(int64(patientGuard))
	pc.expect(100 << 10)
	got := make(chan int, 1)
	go func() {
		n, _ := pc.Read(make([]byte, bufioSize))
		got <- n
	}()
	var batch int
	pc.raw.Control(func(fd uintptr) { batch = min(100<<10, pc.batch(int(fd))) })
	if batch <= bufioSize {
		t.Fatalf("a batch of %d bytes is no batch (receive buffer too small?)", batch)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lowat(t, pc) != batch {
		if time.Now().After(deadline) {
			t.Fatalf("SO_RCVLOWAT while 100 KiB are promised: %d, want %d", lowat(t, pc), batch)
		}
		time.Sleep(time.Millisecond)
	}
	srv.Write(make([]byte, 100<<10))
	select {
	case n := <-got:
		if n != bufioSize {
			t.Fatalf("read %d bytes", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the batch arrived but the read did not end")
	}
	if p := pc.promised.Load(); p != 100<<10-bufioSize {
		t.Fatalf("promise after reading %d bytes: %d", bufioSize, p)
	}
	if _, err := io.ReadFull(pc, make([]byte, 100<<10-bufioSize)); err != nil {
		t.Fatal(err)
	}
	if p := pc.promised.Load(); p != 0 {
		t.Fatalf("promise after all of it came: %d", p)
	}
	go func() { time.Sleep(20 * time.Millisecond); srv.Write([]byte("tiny")) }()
	within(t, "a small read after the promise was kept", 10*time.Second, func() {
		if n, err := pc.Read(make([]byte, bufioSize)); n != 4 || err != nil {
			t.Errorf("read %d, %v", n, err)
		}
	})
	if v := lowat(t, pc); v != 1 {
		t.Errorf("SO_RCVLOWAT once the promise was kept: %d, want 1", v)
	}
	if f := pc.guardFired.Load(); f != 0 {
		t.Errorf("the guard fired %d times for promises that were kept", f)
	}
}

// A promise the peer breaks (it stops early) costs one guard's wait and no
// data; the promise is then dropped.
func TestPacketConnBrokenPromiseEndsAtTheGuard(t *testing.T) {
	pc, srv := tcpPair(t)
	pc.expect(1 << 20)
	go func() { time.Sleep(20 * time.Millisecond); srv.Write([]byte("only ten!!")) }()
	within(t, "a read with 1 MiB promised and 10 bytes sent", 10*time.Second, func() {
		buf := make([]byte, bufioSize)
		n, err := pc.Read(buf)
		if err != nil || string(buf[:n]) != "only ten!!" {
			t.Errorf("read %q, %v", buf[:n], err)
		}
	})
	if f := pc.guardFired.Load(); f != 1 {
		t.Errorf("the guard fired %d times, want once", f)
	}
	if p := pc.promised.Load(); p != 0 {
		t.Errorf("a broken promise is kept: %d", p)
	}
	if v := lowat(t, pc); v != 1 {
		t.Errorf("SO_RCVLOWAT after the guard: %d, want 1", v)
	}
}
