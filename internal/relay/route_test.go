package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// driveLines runs a relay whose second PC never answers, feeds it input and
// returns its output lines.
func driveLines(t *testing.T, opt Options, input string) []string {
	t.Helper()
	if opt.Dial == nil {
		opt.Dial = func(context.Context, time.Duration) (remote.Conn, error) { return nil, errors.New("no second PC here") }
	}
	var out strings.Builder
	r := New(opt)
	if err := r.Run(context.Background(), strings.NewReader(input), &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

func TestEveryLineGetsOneReplyAndALongLineDoesNotEndTheRelay(t *testing.T) {
	long := "ENC " + strings.Repeat("x", MaxLine+10) + " y.sve"
	input := "\n" + long + "\nHELLO\nENC onlyone\n" + strings.Repeat("z", 3*MaxLine) + "\nENC /no/such.img /no/such.sve\nQUIT\nENC after-quit a\n"
	lines := driveLines(t, Options{NEmbd: 7}, input)
	if len(lines) != 7 {
		for i, l := range lines {
			t.Logf("line %d: %.80q", i, l)
		}
		t.Fatalf("%d lines for 6 requests and READY", len(lines))
	}
	want := []string{"READY 7", "ERR an empty request line", "ERR the request line is over 1024 KiB", "ERR unknown request", "ERR the request", "ERR the request line is over", "ERR cannot read the picture /no/such.img"}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %.80q, want %q...", i, lines[i], w)
		}
	}
}

func TestALongLastLineWithoutNewlineIsAnswered(t *testing.T) {
	lines := driveLines(t, Options{}, strings.Repeat("q", MaxLine+1))
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "ERR the request line is over") {
		t.Fatalf("%d lines, the last %.80q", len(lines), lines[len(lines)-1])
	}
}

func TestSettingsFileRereadsOnlyWhenChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	sf := &SettingsFile{Path: p}
	st, err := sf.Get()
	if err != nil || st.Vision != "" {
		t.Fatalf("missing file: %v %v", st, err)
	}
	(&settings.Settings{Vision: settings.PlacementCPU}).Save(p)
	if st, _ := sf.Get(); st.Vision != settings.PlacementCPU {
		t.Fatalf("after a write: %q", st.Vision)
	}
	first, _ := sf.Get()
	again, _ := sf.Get()
	if first != again {
		t.Fatal("an unchanged file was read again")
	}
	(&settings.Settings{Vision: settings.PlacementOff}).Save(p) // replaced atomically, as the backend does
	if st, _ := sf.Get(); st.Vision != settings.PlacementOff {
		t.Fatalf("after a replace: %q", st.Vision)
	}
	os.WriteFile(p, []byte("{broken"), 0o644)
	if _, err := sf.Get(); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestOffAndGPUAnswerAtOnceWithoutDialing(t *testing.T) {
	for _, c := range []struct {
		p    settings.Placement
		want string
	}{{settings.PlacementOff, OffMessage}, {settings.PlacementGPU, "ERR pictures move to this PC's GPU when Strata restarts"}} {
		dialed := false
		st := &settings.Settings{Vision: c.p, Remote: &settings.Remote{Host: "h"}}
		lines := driveLines(t, Options{
			Settings: func() (*settings.Settings, error) { return st, nil },
			Dial:     func(context.Context, time.Duration) (remote.Conn, error) { dialed = true; return nil, errors.New("x") },
		}, "ENC a.img b.sve\nQUIT\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], c.want) || dialed {
			t.Errorf("%s: %q (dialed %v)", c.p, lines, dialed)
		}
	}
}

// TestKnownDownAnswersWithoutDialingAgain: once a dial failed, pictures are
// answered from what is known, and the background retry runs.
func TestKnownDownAnswersWithoutDialingAgain(t *testing.T) {
	dials := make(chan struct{}, 100)
	st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "pc"}}
	var got []events.Event
	opt := Options{
		Settings: func() (*settings.Settings, error) { return st, nil },
		Target: func(settings.Remote) Target {
			return Target{Host: "pc", Dial: func(context.Context, time.Duration) (remote.Conn, error) {
				dials <- struct{}{}
				return nil, errors.New("no route to host")
			}}
		},
		RetryEvery: time.Hour,
		// This dial stands for one that took its whole timeout (no answer):
		// every failure counts as slow.
		SlowFailure: -1,
		Report:      func(e events.Event) { got = append(got, e) },
	}
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, []byte("x"), 0o644)
	r := New(opt)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), inR, outW); outW.Close() }()
	br := bufio.NewReader(outR)
	br.ReadString('\n') // READY
	<-dials             // the background connect at start
	for i := 0; i < 5; i++ {
		fmt.Fprintf(inW, "ENC %s %s.sve\n", img, img)
		l, _ := br.ReadString('\n')
		if !strings.HasPrefix(l, "ERR no route to host") {
			t.Fatalf("picture %d: %q", i, l)
		}
	}
	if n := len(dials); n != 0 {
		t.Fatalf("%d more dials while known down (the retry waits an hour)", n)
	}
	io.WriteString(inW, "QUIT\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var unreachable, failed int
	for _, e := range got {
		switch {
		case e.Kind == events.RemoteUnreachable:
			unreachable++
		case e.Kind == events.PictureEncoded && isFalse(events.Get[events.PictureEncodedDetails](e).OK) && events.Get[events.PictureEncodedDetails](e).Where == events.WhereRemote:
			failed++
		default:
			t.Errorf("unexpected event %v", e)
		}
	}
	if unreachable != 1 || failed != 5 {
		t.Fatalf("events %v, want one remote.unreachable and one failed vision.picture per picture", got)
	}
}

func TestPictureBoundFollowsRecentPictures(t *testing.T) {
	var p pictureTimes
	if b := p.bound(1000, DefaultRequestTimeout); b != DefaultRequestTimeout {
		t.Fatalf("before any picture: %v", b)
	}
	for i := 0; i < 5; i++ {
		p.add(2*time.Second, 10<<20) // 5 MB/s
	}
	// 4 x 2 s + twice 50 MB at 5 MB/s.
	if b := p.bound(50<<20, DefaultRequestTimeout); b != 8*time.Second+20*time.Second {
		t.Fatalf("bound %v", b)
	}
	var fast pictureTimes
	for i := 0; i < 5; i++ {
		fast.add(10*time.Millisecond, 1000)
	}
	if b := fast.bound(1000, DefaultRequestTimeout); b != boundFloor {
		t.Fatalf("fast pictures: bound %v, want the floor %v", b, boundFloor)
	}
}

// (Delivery to a service that appears: TestServiceReporterSendsAtOnceWhenAServiceAppears.)
func TestServiceReporterSurvivesNoService(t *testing.T) {
	calls := 0
	rep := NewServiceReporter(func() (*controlapi.Client, error) {
		calls++
		return nil, controlapi.ErrNotRunning
	})
	t0 := time.Now()
	for i := 0; i < maxQueued+10; i++ {
		rep.Event(events.Event{Kind: events.PictureEncoded})
	}
	// Queuing is in-memory: anything near 10 s is a wait on the service.
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("queuing events took %v: it must never wait", d)
	}
	rep.Close(time.Second)
	if calls == 0 {
		t.Fatal("the service was never looked for")
	}
}

// A service that starts while the reporter waits between attempts (2 s,
// growing to a minute) gets the queued events with the next new one, not
// after the pause.
func TestServiceReporterSendsAtOnceWhenAServiceAppears(t *testing.T) {
	got := make(chan controlapi.RelayReport, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep controlapi.RelayReport
		json.NewDecoder(r.Body).Decode(&rep)
		got <- rep
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	var up atomic.Bool
	var looked atomic.Int32
	rep := startReporter(&ServiceReporter{firstRetry: time.Hour, find: func() (*controlapi.Client, error) {
		looked.Add(1)
		if !up.Load() {
			return nil, controlapi.ErrNotRunning
		}
		return &controlapi.Client{BaseURL: srv.URL, HTTP: srv.Client()}, nil
	}})
	defer rep.Close(time.Second)
	rep.Event(events.Event{Kind: events.RemoteUnreachable})
	// The first attempt failed: it waits (an hour) from now.
	for deadline := time.Now().Add(10 * time.Second); looked.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reporter never looked for the service")
		}
	}
	up.Store(true)
	rep.Event(events.Event{Kind: events.RemoteConnected})
	select {
	case r := <-got:
		if len(r.Events) != 2 || r.Events[0].Kind != events.RemoteUnreachable || r.Events[1].Kind != events.RemoteConnected {
			t.Fatalf("delivered %+v, want both events in order", r.Events)
		}
	case <-time.After(30 * time.Second): // the pause is an hour
		t.Fatal("the new event waited for the pause after the failed attempt")
	}
}

// TestDevicesAndFIFOsAreRefusedAtOnce: a device reads without end and a
// FIFO blocks for ever; neither is read, wherever pictures go.
func TestDevicesAndFIFOsAreRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "p.img")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here: ", err)
	}
	for _, p := range []settings.Placement{settings.PlacementRemote, settings.PlacementCPU} {
		st := &settings.Settings{Vision: p, LocalEncoder: "/nonexistent/strata-vision", Remote: &settings.Remote{Host: "pc"}}
		for _, img := range []string{"/dev/zero", fifo} {
			// One request per run: Strata sends one at a time.
			lines := driveLines(t, Options{
				Settings: func() (*settings.Settings, error) { return st, nil },
				Target: func(settings.Remote) Target {
					return Target{Host: "pc", Dial: func(context.Context, time.Duration) (remote.Conn, error) { return nil, errors.New("down") }}
				},
			}, "ENC "+img+" /tmp/x.sve\nQUIT\n")
			if len(lines) != 2 || !strings.Contains(lines[1], img+" is not a regular file") {
				t.Fatalf("%s: %d lines %q", p, len(lines), lines)
			}
		}
	}
}

// TestQuickFailureIsTriedAgainByTheNextPicture: a dial that fails at once
// (refused, reset, no route: a millisecond on a LAN) is not kept as known
// down: the next picture dials again, so a second PC whose ssh server is
// back is used by the very next picture; no background retry runs.
func TestQuickFailureIsTriedAgainByTheNextPicture(t *testing.T) {
	var dials atomic.Int32
	st := &settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "pc"}}
	opt := Options{
		Settings: func() (*settings.Settings, error) { return st, nil },
		Target: func(settings.Remote) Target {
			return Target{Host: "pc", Dial: func(context.Context, time.Duration) (remote.Conn, error) {
				dials.Add(1)
				return nil, errors.New("connection refused")
			}}
		},
		RetryEvery: time.Hour,
	}
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, []byte("x"), 0o644)
	r := New(opt)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), inR, outW); outW.Close() }()
	br := bufio.NewReader(outR)
	br.ReadString('\n') // READY
	var lines []string
	for i := 0; i < 4; i++ {
		fmt.Fprintf(inW, "ENC %s %s.sve\n", img, img)
		l, _ := br.ReadString('\n')
		lines = append(lines, strings.TrimSpace(l))
		if !strings.HasPrefix(l, "ERR connection refused") {
			t.Errorf("picture %d: %q", i, l)
		}
	}
	io.WriteString(inW, "QUIT\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The start's background dial, then one per picture.
	if n := dials.Load(); n != 5 {
		t.Errorf("%d dials for 4 pictures after a quick failure, want 5 (the start's, then one each): %q", n, lines)
	}
}

// TestEveryPictureHasOneOutcomeEvent: each picture, whatever stops it, is
// one vision.picture event with ok false and the reason (the ERR's), and
// where it was meant to be read; a corrupt settings file too.
func TestEveryPictureHasOneOutcomeEvent(t *testing.T) {
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, []byte("x"), 0o644)
	for _, c := range []struct {
		name     string
		settings func() (*settings.Settings, error)
		where    string
		reason   string
	}{
		{"off", func() (*settings.Settings, error) { return &settings.Settings{Vision: settings.PlacementOff}, nil }, events.WhereOff, "switched off"},
		{"gpu", func() (*settings.Settings, error) { return &settings.Settings{Vision: settings.PlacementGPU}, nil }, events.WhereNone, "when Strata restarts"},
		{"no second PC", func() (*settings.Settings, error) { return &settings.Settings{Vision: settings.PlacementRemote}, nil }, events.WhereRemote, "no second PC"},
		{"corrupt settings", func() (*settings.Settings, error) {
			return nil, errors.New("the companion settings s.json are not valid JSON")
		}, events.WhereNone, "not valid JSON"},
		{"cpu without an encoder", func() (*settings.Settings, error) { return &settings.Settings{Vision: settings.PlacementCPU}, nil }, events.WhereLocalCPU, "local_encoder"},
	} {
		var got []events.Event
		lines := driveOne(t, Options{Settings: c.settings, Report: func(e events.Event) { got = append(got, e) }}, "ENC "+img+" "+img+".sve")
		var outcomes []events.Event
		for _, e := range got {
			if e.Kind == events.PictureEncoded {
				outcomes = append(outcomes, e)
			}
		}
		var out events.PictureEncodedDetails
		if len(outcomes) == 1 {
			out = events.Get[events.PictureEncodedDetails](outcomes[0])
		}
		if len(outcomes) != 1 || !isFalse(out.OK) || out.Where != c.where ||
			!strings.Contains(outcomes[0].Message, c.reason) || "ERR "+outcomes[0].Message != lines[1] {
			t.Errorf("%s: reply %q, outcome events %+v", c.name, lines[1:], outcomes)
		}
	}
}

// driveOne runs a relay for one request: READY, the request, its reply,
// then QUIT (never before the reply: QUIT gives a picture in flight up).
func driveOne(t *testing.T, opt Options, request string) []string {
	t.Helper()
	if opt.Dial == nil {
		opt.Dial = func(context.Context, time.Duration) (remote.Conn, error) { return nil, errors.New("no second PC here") }
	}
	r := New(opt)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), inR, outW); outW.Close() }()
	br := bufio.NewReader(outR)
	ready, _ := br.ReadString('\n')
	io.WriteString(inW, request+"\n")
	reply, _ := br.ReadString('\n')
	io.WriteString(inW, "QUIT\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return []string{strings.TrimSpace(ready), strings.TrimSpace(reply)}
}

// isFalse reads a *bool detail as the wire's false: nil (the key absent) is
// not false.
func isFalse(b *bool) bool { return b != nil && !*b }
