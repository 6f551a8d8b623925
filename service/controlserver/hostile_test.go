package controlserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
)

// serveWith serves b on loopback with the timeouts to until t ends.
func serveWith(t *testing.T, b Backend, to Timeouts) (*Server, string) {
	t.Helper()
	s, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	s.Timeouts = to
	l, err := Listen("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, l.Addr().String()
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(ents)
}

// The reproduction: 2,000 connections that never send a whole
// authorised request (nothing at all, half a header, a body announced and
// never sent with or without the token, an idle keep-alive after a 401 or
// after a good request). Each must be closed by the server, and once the
// clients let go the process holds no more fds than before.
func TestStalledConnectionsAreClosed(t *testing.T) {
	const n = 2000
	bus := events.NewBus(10)
	s, addr := serveWith(t, Backend{Bus: bus, Owner: ownertest.Funcs{
		SetVisionF: func(context.Context, controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
			return &controlapi.VisionResponse{}, nil
		}}}, Timeouts{Header: 300 * time.Millisecond, Body: 300 * time.Millisecond, Idle: 300 * time.Millisecond})
	auth := "Authorization: Bearer " + s.Token() + "\r\n"
	kinds := []struct{ name, send, wantStatus string }{
		{"nothing", "", ""},
		{"half a header", "GET /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\n", ""},
		{"body announced, no token", "POST /v1/vision HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n", "401"},
		{"idle after a 401", "GET /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "401"},
		{"body announced with the token", "POST /v1/vision HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Content-Length: 100\r\n\r\n{", "408"},
		{"idle after a good request", "GET /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n", "200"},
	}
	base := openFDs(t)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if k := kinds[i%len(kinds)]; k.send != "" {
			if _, err := io.WriteString(c, k.send); err != nil {
				t.Fatal(err)
			}
		}
	}
	peak := openFDs(t)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := kinds[i%len(kinds)]
			// Bounded only so a broken server fails the test instead of
			// hanging it; the server's own limit is 300 ms.
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil {
				errs <- fmt.Sprintf("%s: the server never closed the connection (%v)", k.name, err)
				return
			}
			if k.wantStatus != "" && !strings.HasPrefix(string(got), "HTTP/1.1 "+k.wantStatus) {
				errs <- fmt.Sprintf("%s: answered %q, want %s", k.name, firstLine(got), k.wantStatus)
			}
			if k.wantStatus == "401" && !strings.Contains(string(got), "Connection: close") {
				errs <- fmt.Sprintf("%s: a refusal without Connection: close", k.name)
			}
		}()
	}
	wg.Wait()
	close(errs)
	seen := map[string]bool{}
	for e := range errs {
		if !seen[e] {
			t.Error(e)
		}
		seen[e] = true
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// The server side of each connection is gone too (fds are released as
	// the closes complete; poll briefly).
	var now int
	for i := 0; i < 100; i++ {
		if now = openFDs(t); now <= base+10 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("fds: %d before, %d with %d connections open, %d after", base, peak, n, now)
	if now > base+10 {
		t.Fatalf("%d fds still open after every connection was closed (%d before): the server kept connections", now, base)
	}
}

func firstLine(b []byte) string {
	l, _, _ := bufio.NewReader(strings.NewReader(string(b))).ReadLine()
	return string(l)
}

// `{"placement":"off"}GARBAGE` was accepted; data after the JSON object is
// refused with words and the change is not made. White space is fine.
func TestTrailingDataAfterTheBodyIsRefused(t *testing.T) {
	called := 0
	s, addr := serveWith(t, Backend{Bus: events.NewBus(1), Owner: ownertest.Funcs{
		SetVisionF: func(context.Context, controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
			called++
			return &controlapi.VisionResponse{}, nil
		}}}, DefaultTimeouts)
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"placement":"off"}GARBAGE`, 400},
		{`{"placement":"off"}{"placement":"gpu"}`, 400},
		{`{"placement":"off"} x`, 400},
		{"{\"placement\":\"off\"}\r\n \n", 200},
	} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/vision", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+s.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%q: %d %s, want %d", tc.body, resp.StatusCode, msg, tc.code)
		}
		if tc.code == 400 && !strings.Contains(string(msg), "after its JSON object") {
			t.Errorf("%q: the refusal does not say what is wrong: %s", tc.body, msg)
		}
	}
	if called != 1 {
		t.Fatalf("the vision change ran %d times, want once (only the clean body)", called)
	}
}

// The body deadline ends with the body: a handler that takes longer than
// it (a vision change restarts Strata) keeps its request context.
func TestBodyDeadlineDoesNotCutALongHandler(t *testing.T) {
	body := 100 * time.Millisecond
	s, addr := serveWith(t, Backend{Bus: events.NewBus(1), Owner: ownertest.Funcs{
		SetVisionF: func(ctx context.Context, _ controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("the request context ended: %v", ctx.Err())
			case <-time.After(5 * body):
			}
			return &controlapi.VisionResponse{}, nil
		}}}, Timeouts{Header: body, Body: body, Idle: body})
	c := &controlapi.Client{BaseURL: "http://" + addr, Token: s.Token(), HTTP: &http.Client{}}
	if _, err := c.SetVision(context.Background(), controlapi.VisionRequest{Placement: "off"}); err != nil {
		t.Fatal(err)
	}
}
