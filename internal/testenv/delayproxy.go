package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// StartDelayProxy listens on a loopback port and forwards each connection to
// target, holding every byte back by oneWay in each direction: a link with a
// round-trip time of 2*oneWay (plus the real one). It does not limit
// throughput: data read is queued with its arrival time and written once that
// time plus the delay has passed, while reading goes on (a bandwidth-delay
// product of up to ~256 MiB per direction is in flight before the reader
// waits). This kernel has no netem, so this is how tests add latency; combine
// it with NewNetns's tbf for bandwidth. The proxy stops when t ends.
func StartDelayProxy(t testing.TB, target string, oneWay time.Duration) (addr string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("delay proxy: %v", err)
	}
	p := &delayProxy{target: target, delay: oneWay, conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		l.Close()
		p.closeAll()
		p.wg.Wait()
	})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

type delayProxy struct {
	target string
	delay  time.Duration
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *delayProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *delayProxy) serve(client net.Conn) {
	if !p.track(client) {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		client.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(server, client) }()
	go func() { defer wg.Done(); p.pump(client, server) }()
	wg.Wait()
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// chunk is data read at one moment, or the end of the stream (eof: a clean
// end, passed on as a half close; fail: an error, which ends both ways).
type chunk struct {
	due       time.Time
	data      []byte
	eof, fail bool
}

// pump copies src to dst, each chunk written no earlier than its read time
// plus the delay. An end of stream is passed on (half close) after the delay
// too; an error ends both directions.
func (p *delayProxy) pump(dst, src net.Conn) {
	// 8192 chunks of up to 32 KiB: the reader blocks only when that much is
	// in flight, far above any test's bandwidth-delay product.
	q := make(chan chunk, 8192)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			now := time.Now()
			if n > 0 {
				q <- chunk{due: now.Add(p.delay), data: buf[:n]}
			}
			if err != nil {
				q <- chunk{due: now.Add(p.delay), eof: errors.Is(err, io.EOF), fail: !errors.Is(err, io.EOF)}
				return
			}
		}
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		switch {
		case c.eof:
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			continue
		case c.fail:
			src.Close()
			dst.Close()
			continue
		}
		if _, err := dst.Write(c.data); err != nil {
			src.Close()
			dst.Close()
			for range q { // let the reader finish
			}
			return
		}
	}
}
