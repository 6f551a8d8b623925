package sshx

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/strata-companion/companion/internal/rawio"
)

// x/crypto/ssh reads a packet as its 4-byte length (through a 4 KiB
// bufio.Reader) and then the rest of it with one io.ReadFull of exactly the
// bytes it still needs. While a large packet trickles in, every arriving
// segment would wake the reading thread to take a few KiB and sleep again:
// at 1 Gbit/s that was ~560 sleeps and wake-ups per 10.5 MB .sve, a third of
// the relay's CPU (bench/relay). packetConn sets SO_RCVLOWAT to the bytes
// such a read still needs before it waits, so the thread sleeps until the
// rest of the packet is there and wakes once.
//
// It is safe because a read larger than the bufio buffer asks only for the
// remainder of a packet the peer has begun: those bytes are on their way
// and nothing else can be delivered before them. Reads of the bufio size or
// less (the next packet's length, whose size is unknown) wait for 1 byte as
// usual. Should a future x/crypto read ahead past a packet's end, the guard
// below turns the low-water mark off after lowatGuard instead of waiting
// for bytes that may never come.
//
// A caller that knows more is coming (the relay, once a result's length is
// announced) promises it with ExpectIncoming: until those bytes have been
// read, any read that has to wait, a 4-byte length included, waits for a
// batch of them (a quarter of the receive buffer, at most maxLowat): at
// 1 Gbit/s a 10.5 MB .sve costs the relay ~140 context switches instead of
// ~230 (its last 2 MiB, which x/crypto may have read before the promise was
// made, still come packet by packet). The guard covers a broken promise too.
const (
	bufioSize  = 4096    // x/crypto/ssh's bufio.NewReader default
	maxLowat   = 1 << 18 // the most one wait asks for (x/crypto's packets are at most 256 KiB)
	lowatGuard = 250 * time.Millisecond
)

type packetConn struct {
	*net.TCPConn
	raw   syscall.RawConn
	on    atomic.Bool // after the handshake (which has its own deadlines)
	lowat int         // the socket's SO_RCVLOWAT; only the reading goroutine touches it
	// guard is how long a read waits for a low-water mark before it gives
	// up on it (lowatGuard; tests that must tell a broken promise from a
	// scheduling stall on a loaded machine make it longer).
	guard atomic.Int64 // a time.Duration
	// promised is how many more bytes are certain to arrive (see
	// ExpectIncoming); every read takes what it got off it.
	promised atomic.Int64
	// guardFired counts reads the guard ended (a test's evidence that a
	// promise or a packet's rest did not come).
	guardFired atomic.Int64
}

// newPacketConn wraps c when it is a TCP connection; on returns nil, c for
// anything else.
func newPacketConn(c net.Conn) (*packetConn, net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, c
	}
	pc := &packetConn{TCPConn: tc, raw: raw, lowat: 1}
	pc.guard.Store(int64(lowatGuard))
	return pc, pc
}

func (c *packetConn) start() { c.on.Store(true) }

func (c *packetConn) setLowat(fd int, want int) {
	if want == c.lowat {
		return
	}
	// Raw, like the reads (internal/rawio): it does not block.
	v := int32(want)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, uintptr(unsafe.Pointer(&v)), 4, 0)
	if e == 0 {
		c.lowat = want
	}
}

func (c *packetConn) Write(p []byte) (int, error) {
	written := 0
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for written < len(p) {
			n, e := rawio.Write(fd, p[written:])
			if e == unix.EAGAIN {
				return false
			}
			if e != nil {
				werr = e
				return true
			}
			written += n
		}
		return true
	})
	if err == nil && werr != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", werr)}
	}
	return written, err
}

func (c *packetConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	guarded := false // the guard fired in this Read: no mark again
	for {
		var n int
		var rerr error
		armed := false
		err := c.raw.Read(func(fd uintptr) bool {
			n, rerr = rawio.Read(fd, p) // no sysmon wake-up: see internal/rawio
			if rerr != unix.EAGAIN {
				return true
			}
			want := 1
			if c.on.Load() && !guarded {
				if len(p) > bufioSize {
					want = min(len(p), maxLowat)
				}
				// More is promised: sleep until a batch of it is here.
				if pr := c.promised.Load(); pr > int64(want) {
					want = max(want, int(min(pr, int64(c.batch(int(fd))))))
				}
			}
			c.setLowat(int(fd), want)
			if want > 1 && !armed {
				armed = true
				c.TCPConn.SetReadDeadline(time.Now().Add(time.Duration(c.guard.Load())))
			}
			return false
		})
		if armed {
			c.TCPConn.SetReadDeadline(time.Time{})
		}
		if err != nil {
			if armed && errors.Is(err, os.ErrDeadlineExceeded) {
				c.guardFired.Add(1)
				c.promised.Store(0)
				// The rest did not come in time: wait for any byte again.
				c.raw.Control(func(fd uintptr) { c.setLowat(int(fd), 1) })
				guarded = true
				continue
			}
			return 0, err
		}
		if rerr != nil {
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
		}
		if n == 0 {
			return 0, io.EOF
		}
		if pr := c.promised.Load(); pr > 0 {
			// Add, not Store: a new promise made meanwhile only loses
			// these bytes (it stays a lower bound).
			c.promised.Add(-min(int64(n), pr))
		}
		return n, nil
	}
}

// batch is how much one wait asks for while more is promised: a quarter of
// the socket's receive buffer (so the mark never holds back the window the
// kernel advertises), at most maxLowat.
func (c *packetConn) batch(fd int) int {
	var v int32
	l := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 || v <= 0 {
		return 1
	}
	return min(int(v)/4, maxLowat)
}

// expect promises n more bytes (see ExpectIncoming).
func (c *packetConn) expect(n int64) { c.promised.Store(max(n, 0)) }
