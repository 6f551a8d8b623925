package lend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseCode(t *testing.T) {
	c, err := NewCode()
	if err != nil {
		t.Fatal(err)
	}
	for _, typed := range []string{string(c), c.String(), strings.ToLower(c.String()), " " + string(c[:2]) + " " + string(c[2:5]) + "-" + string(c[5:]) + " "} {
		got, err := ParseCode(typed)
		if err != nil || got != c {
			t.Errorf("ParseCode(%q) = %q, %v; want %q", typed, got, err, c)
		}
	}
	for _, bad := range []string{"", "ABCD-EFG", "ABCD-EFGHJ", "ABCD-EFG0", "ABCD-EFGO", "ABCD-EFGI", "ABCD-EFG1", "ABCD-EFGL", "ABCD_EFGH", "ÄBCD-EFGH"} {
		if _, err := ParseCode(bad); !errors.Is(err, ErrCodeForm) {
			t.Errorf("ParseCode(%q) = %v, want ErrCodeForm", bad, err)
		}
	}
	if strings.ContainsAny(Alphabet, "01OIL") || len(Alphabet) != 31 {
		t.Fatalf("alphabet %q has look-alikes or the wrong size", Alphabet)
	}
	seen := map[Code]bool{}
	for i := 0; i < 200; i++ {
		c, _ := NewCode()
		if seen[c] {
			t.Fatalf("code %s drawn twice in 200", c)
		}
		seen[c] = true
	}
}

var req = Request{PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBWZ+test", Comment: "strata-companion@pc", From: "pc"}

// run pairs over a pipe: the lender with book, this PC with code.
func run(t *testing.T, book Book, code Code, lender func(net.Conn) error) (*Grant, int, error) {
	t.Helper()
	a, b := net.Pipe()
	granted := 0
	done := make(chan error, 1)
	go func() {
		defer b.Close()
		if lender != nil {
			done <- lender(b)
			return
		}
		done <- Serve(context.Background(), b, book, func(_ context.Context, r Request) (*Grant, error) {
			granted++
			if r.PublicKey != req.PublicKey {
				t.Errorf("granted a request for %q", r.PublicKey)
			}
			return &Grant{Name: "laptop", HostKey: "ssh-ed25519 HOST", User: "gamer", Port: 22, OS: "linux"}, nil
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := Pair(ctx, a, code, req)
	a.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the lender's half did not end")
	}
	return g, granted, err
}

func TestPairWithTheRightCode(t *testing.T) {
	code, _ := NewCode()
	book := NewMemBook(code, time.Minute)
	g, n, err := run(t, book, code, nil)
	if err != nil || g == nil || g.HostKey != "ssh-ed25519 HOST" || n != 1 {
		t.Fatalf("Pair = %+v, %v (granted %d times)", g, err, n)
	}
	// Single use: the same code again is refused, and nothing is granted.
	_, n, err = run(t, book, code, nil)
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != RefusedUsed || n != 0 {
		t.Fatalf("second use = %v (granted %d)", err, n)
	}
	if !strings.Contains(err.Error(), "lend code") {
		t.Errorf("the refusal does not say how to get a new code: %v", err)
	}
}

func TestWrongCodesBurnTheCode(t *testing.T) {
	code, _ := NewCode()
	book := NewMemBook(code, time.Minute)
	wrong := Code(strings.Repeat("2", CodeLen))
	if wrong == code {
		wrong = Code(strings.Repeat("3", CodeLen))
	}
	for i := 1; i <= MaxTries; i++ {
		_, n, err := run(t, book, wrong, nil)
		var r *RefusedError
		if !errors.As(err, &r) || n != 0 {
			t.Fatalf("try %d: %v (granted %d)", i, err, n)
		}
		want := RefusedWrong
		if i == MaxTries {
			want = RefusedBurned
		}
		if r.Kind != want || r.TriesLeft != MaxTries-i {
			t.Fatalf("try %d: %+v, want %s with %d left", i, r, want, MaxTries-i)
		}
	}
	// Burned: even the right code no longer pairs.
	_, n, err := run(t, book, code, nil)
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != RefusedBurned || n != 0 {
		t.Fatalf("right code after burning = %v (granted %d)", err, n)
	}
}

func TestExpiredCode(t *testing.T) {
	code, _ := NewCode()
	book := NewMemBook(code, time.Minute)
	book.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	_, n, err := run(t, book, code, nil)
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != RefusedExpired || n != 0 {
		t.Fatalf("expired = %v (granted %d)", err, n)
	}
}

// An impostor (it does not know the code) that answers with a grant of its
// own is found out: the grant is not returned.
func TestImpostorIsRefused(t *testing.T) {
	code, _ := NewCode()
	other, _ := NewCode()
	impostor := func(c net.Conn) error {
		return Serve(context.Background(), c, alwaysRight{NewMemBook(other, time.Minute)}, func(context.Context, Request) (*Grant, error) {
			return &Grant{HostKey: "ssh-ed25519 IMPOSTOR"}, nil
		})
	}
	// Its Serve checks our confirmation against its own code: a wrong one.
	g, _, err := run(t, nil, code, impostor)
	var r *RefusedError
	if g != nil || !errors.As(err, &r) || r.Kind != RefusedWrong {
		t.Fatalf("impostor = %+v, %v", g, err)
	}
	// One that skips the check and sends a grant anyway.
	forger := func(c net.Conn) error {
		var a m1
		if err := readFrame(c, &a); err != nil {
			return err
		}
		_, YB, _ := share(generator(other, a.SID))
		writeFrame(c, m2{YB: YB})
		var m m3
		readFrame(c, &m)
		body, _ := json.Marshal(Grant{HostKey: "ssh-ed25519 IMPOSTOR"})
		return writeFrame(c, m4{Grant: body, Confirm: make([]byte, 32)})
	}
	g, _, err = run(t, nil, code, forger)
	if g != nil || !errors.Is(err, ErrImpostor) {
		t.Fatalf("forger = %+v, %v", g, err)
	}
}

// alwaysRight never counts a try (an impostor does not care).
type alwaysRight struct{ *MemBook }

func (alwaysRight) Wrong() int { return MaxTries }

// A party in the middle that changes the request (its own key instead of
// ours) makes the lender refuse: the request is bound to the code.
func TestTamperedRequestIsRefused(t *testing.T) {
	code, _ := NewCode()
	book := NewMemBook(code, time.Minute)
	a, b := net.Pipe()
	c, d := net.Pipe()
	go func() { // the middle: forwards, swapping m3's request
		var x m1
		readFrame(b, &x)
		writeFrame(c, x)
		var y m2
		readFrame(c, &y)
		writeFrame(b, y)
		var z m3
		readFrame(b, &z)
		z.Request, _ = json.Marshal(Request{PublicKey: "ssh-ed25519 ATTACKER", Comment: "x"})
		writeFrame(c, z)
		var w m4
		readFrame(c, &w)
		writeFrame(b, w)
		b.Close()
	}()
	granted := false
	go Serve(context.Background(), d, book, func(context.Context, Request) (*Grant, error) {
		granted = true
		return &Grant{}, nil
	})
	_, err := Pair(context.Background(), a, code, req)
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != RefusedWrong || granted {
		t.Fatalf("tampered = %v (granted %v)", err, granted)
	}
}

func TestGarbledFramesAreBounded(t *testing.T) {
	a, b := net.Pipe()
	go func() { var x m1; readFrame(b, &x); b.Write([]byte{0xff, 0xff, 0xff, 0xff}); b.Close() }()
	_, err := Pair(context.Background(), a, "ABCDEFGH", req)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("garbled answer = %v", err)
	}
}

// recorder keeps every byte this PC sent (what a listener on the LAN sees).
type recorder struct {
	net.Conn
	sent []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.sent = append(r.sent, p...)
	return r.Conn.Write(p)
}

// An eavesdropper that saw a whole pairing cannot pair later from it: its
// replay of this PC's messages, on a lender holding the very same code
// (not yet used), is refused and granted nothing; and nothing it saw holds
// the code.
func TestEavesdropperCannotReplay(t *testing.T) {
	code, _ := NewCode()
	a, b := net.Pipe()
	rec := &recorder{Conn: a}
	go Serve(context.Background(), b, NewMemBook(code, time.Minute), func(context.Context, Request) (*Grant, error) { return &Grant{HostKey: "k"}, nil })
	if _, err := Pair(context.Background(), rec, code, req); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if strings.Contains(string(rec.sent), string(code)) {
		t.Fatal("the code travelled in the clear")
	}
	// Replay both messages to a fresh lender with the same code.
	c, d := net.Pipe()
	granted := false
	book := NewMemBook(code, time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), d, book, func(context.Context, Request) (*Grant, error) { granted = true; return &Grant{}, nil })
		d.Close()
	}()
	r := bytes.NewReader(rec.sent)
	var first m1
	var third m3
	readFrame(r, &first)
	readFrame(r, &third)
	writeFrame(c, first)
	var answer m2
	readFrame(c, &answer)
	writeFrame(c, third)
	var last m4
	readFrame(c, &last)
	<-done
	if granted || last.RefusedError == nil || last.Kind != RefusedWrong {
		t.Fatalf("replay: granted %v, answer %+v", granted, last.RefusedError)
	}
	// The real code still works afterwards (the replay cost one try).
	if g, _, err := run(t, book, code, nil); err != nil || g == nil {
		t.Fatalf("the real code after a replay: %v", err)
	}
}
