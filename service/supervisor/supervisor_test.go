//go:build !windows

package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/stratatmp"
	"github.com/strata-companion/companion/internal/testenv"
)

type harness struct {
	t    *testing.T
	bus  *events.Bus
	sup  *Supervisor
	root *fakestrata.Root
	next uint64
	args string
	done chan error
	mu   sync.Mutex
	seen []events.Event
}

func newHarness(t *testing.T, o fakestrata.RootOptions, tune func(*Config)) *harness {
	t.Helper()
	args := filepath.Join(t.TempDir(), "args.jsonl")
	o.Env = append(o.Env, fakestrata.EnvArgsFile+"="+args)
	r := fakestrata.NewRoot(t, o)
	h := &harness{t: t, bus: events.NewBus(1000), root: r, args: args, done: make(chan error, 1)}
	cfg := Config{
		StrataRoot:    r.Dir,
		ConfigPath:    r.Config,
		LogFile:       filepath.Join(t.TempDir(), "server.log"),
		Events:        h.bus,
		Backoff:       func(n int) time.Duration { return time.Duration(n) * 10 * time.Millisecond },
		StopTimeout:   5 * time.Second,
		HealthEvery:   100 * time.Millisecond,
		FollowEvery:   50 * time.Millisecond,
		ProgressEvery: time.Hour,
	}
	if tune != nil {
		tune(&cfg)
	}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return h
}

// waitFor returns the next event of kind (skipping others), failing after a
// generous time (machines are noisy; this is not a timing assertion).
func (h *harness) waitFor(kind events.Kind) events.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		evs, _, err := h.bus.Wait(ctx, h.next)
		if err != nil {
			h.t.Fatalf("no %s event; saw %v", kind, h.kinds())
		}
		for _, e := range evs {
			h.next = e.Seq
			h.mu.Lock()
			h.seen = append(h.seen, e)
			h.mu.Unlock()
			if e.Kind == kind {
				return e
			}
		}
	}
}

// waitEngineLogCache waits for the expert cache event read from the engine
// log. It may come before or after the ready line (the follower reads the
// log on its own schedule): look at everything so far, then wait for more.
func (h *harness) waitEngineLogCache() {
	h.t.Helper()
	fromLog := func() bool {
		evs, _ := h.bus.Since(0)
		for _, e := range evs {
			if e.Kind == events.ExpertCache && events.Get[events.ExpertCacheDetails](e).Source.Source == "engine-log" {
				return true
			}
		}
		return false
	}
	for !fromLog() {
		h.waitFor(events.ExpertCache)
	}
}

// waitAll returns the first n events of kind, whenever they came (before
// or after what the test waited for last): everything so far, then more.
func (h *harness) waitAll(kind events.Kind, n int) []events.Event {
	h.t.Helper()
	for {
		evs, _ := h.bus.Since(0)
		var got []events.Event
		for _, e := range evs {
			if e.Kind == kind {
				got = append(got, e)
			}
		}
		if len(got) >= n {
			return got[:n]
		}
		h.waitFor(kind)
	}
}

func (h *harness) kinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.seen {
		out = append(out, string(e.Kind)+": "+e.Message)
	}
	return out
}

func (h *harness) count(kind events.Kind) int {
	n := 0
	evs, _ := h.bus.Since(0)
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// pidOf is the pid a ServerReady event names.
func pidOf(t *testing.T, e events.Event) int {
	t.Helper()
	p := events.Get[events.ServerReadyDetails](e).PID
	if p <= 0 {
		t.Fatalf("event %s has no pid: %v", e.Kind, e.Details)
	}
	return p
}

// alive lists the live (not zombie) processes in process group pgid.
func alive(pgid int) []int { return testenv.GroupMembers(pgid) }

func TestStartsAsStrataSaysAndStops(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{APIKey: "secret-key"}, nil)
	h.waitFor(events.ServerStarting)
	ready := h.waitFor(events.ServerReady)
	pid := pidOf(t, ready)
	if r := events.Get[events.ServerReadyDetails](ready); r.Model != "strata-test" || r.URL != fmt.Sprintf("http://127.0.0.1:%d/v1", h.root.Port) {
		t.Errorf("ready details %v", ready.Details)
	}
	// Exactly docs/strata.md's command line, in the Strata root.
	b, _ := os.ReadFile(h.args)
	var rec struct {
		Args []string `json:"args"`
		Cwd  string   `json:"cwd"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &rec); err != nil {
		t.Fatalf("args file %q: %v", b, err)
	}
	want := []string{"--engine", "strata", "--config", h.root.Config, "--port", strconv.Itoa(h.root.Port)}
	if strings.Join(rec.Args, " ") != strings.Join(want, " ") {
		t.Errorf("server args %q, want %q", rec.Args, want)
	}
	if rec.Cwd != h.root.Dir {
		t.Errorf("server ran in %s, want the Strata root %s", rec.Cwd, h.root.Dir)
	}
	// The expert cache from the engine log (the engine child's stderr).
	h.waitEngineLogCache()
	if err := h.sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ex := h.waitFor(events.ServerExited)
	if !events.Get[events.ServerExitedDetails](ex).Expected || events.Get[events.ServerExitedDetails](ex).Code != 0 {
		t.Errorf("exit details %v", ex.Details)
	}
	h.waitFor(events.ServerStopped)
	if left := alive(pid); len(left) > 0 {
		t.Errorf("processes left in the server's group: %v", left)
	}
	var logb []byte
	testenv.WaitFor(t, 20*time.Second, "the ready line in the captured log", func() bool {
		logb, _ = os.ReadFile(h.sup.LogFile())
		return strings.Contains(string(logb), "ready: http://127.0.0.1:")
	})
	if strings.Contains(string(logb), "secret-key") {
		t.Error("the API key leaked into the captured log")
	}
}

func TestSlowStartShowsProgress(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Step: "400ms"}, func(c *Config) { c.ProgressEvery = 100 * time.Millisecond })
	h.waitFor(events.ServerStarting)
	p := h.waitFor(events.ServerProgress)
	for !strings.Contains(p.Message, "still starting after") {
		p = h.waitFor(events.ServerProgress)
	}
	h.waitFor(events.ServerReady)
}

func TestCrashRestartsWithBackoff(t *testing.T) {
	var mu sync.Mutex
	var asked []int
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) {
		c.Backoff = func(n int) time.Duration {
			mu.Lock()
			asked = append(asked, n)
			mu.Unlock()
			return 50 * time.Millisecond
		}
	})
	first := pidOf(t, h.waitFor(events.ServerReady))
	syscall.Kill(first, syscall.SIGKILL)
	ex := h.waitFor(events.ServerExited)
	if events.Get[events.ServerExitedDetails](ex).Expected {
		t.Errorf("a kill was taken as expected: %v", ex.Details)
	}
	rs := h.waitFor(events.ServerRestarting)
	if events.Get[events.ServerRestartingDetails](rs).Attempt != 1 {
		t.Errorf("restart details %v", rs.Details)
	}
	second := pidOf(t, h.waitFor(events.ServerReady))
	if second == first {
		t.Fatal("the same pid after a restart")
	}
	if left := alive(first); len(left) > 0 {
		t.Errorf("the crashed server left processes behind: %v", left)
	}
	syscall.Kill(second, syscall.SIGKILL)
	if rs := h.waitFor(events.ServerRestarting); events.Get[events.ServerRestartingDetails](rs).Attempt != 2 {
		t.Errorf("second restart details %v", rs.Details)
	}
	h.waitFor(events.ServerReady)
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
		t.Errorf("backoff asked for %v, want [1 2]", asked)
	}
}

func TestCrashLoopGivesUpWithTheLastLines(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Mode: "crash-after=0s"}, func(c *Config) { c.CrashLimit = 3 })
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "crashed 3 times") {
		t.Errorf("failure %q", f.Message)
	}
	last := events.Get[events.ServerFailedDetails](f).LastLines
	if !strings.Contains(strings.Join(last, "\n"), "RuntimeError: stand-in crash") {
		t.Errorf("last lines %q", last)
	}
	if n := h.count(events.ServerStarting); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
	// Start clears the failure and tries again.
	h.root.SetMode("")
	if err := h.sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitFor(events.ServerReady)
}

func TestPortInUseFailsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var asked []int // a restart is scheduled through Backoff: none may be
	h := newHarness(t, fakestrata.RootOptions{Port: l.Addr().(*net.TCPAddr).Port}, func(c *Config) {
		c.Backoff = func(n int) time.Duration { mu.Lock(); asked = append(asked, n); mu.Unlock(); return time.Hour }
	})
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "already in use") || !strings.Contains(f.Message, strconv.Itoa(h.root.Port)) {
		t.Errorf("failure %q", f.Message)
	}
	// A round trip through the decision loop: once Stop is answered, the
	// loop has handled the exit before it, so a restart would have been
	// launched (a second start) or scheduled (Backoff asked) by now.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.sup.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := h.count(events.ServerStarting); n != 1 || len(asked) != 0 {
		t.Errorf("%d starts (want 1), restarts scheduled %v (want none)", n, asked)
	}
}

func TestHangAtStartTimesOut(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Mode: "hang"}, func(c *Config) { c.StartTimeout = 300 * time.Millisecond })
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "did not get ready") {
		t.Errorf("failure %q", f.Message)
	}
}

func TestEncoderThatDoesNotStartIsNotRetried(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.sh")
	testenv.WriteExecutable(bad, []byte("#!/bin/sh\necho 'error: cannot open mm.gguf'\n"))
	h := newHarness(t, fakestrata.RootOptions{Extra: map[string]any{
		"vision": map[string]any{"exe": bad, "mmproj": "mm.gguf", "model": "stub.gguf"}}}, nil)
	h.waitFor(events.EncoderFailed)
	f := h.waitFor(events.ServerFailed)
	if !strings.Contains(f.Message, "cannot open mm.gguf") {
		t.Errorf("failure %q", f.Message)
	}
}

// A server that ignores SIGTERM, with an engine that does too: the stop
// kills the whole tree after the timeout and leaves nothing behind.
func TestStopKillsAStubbornTree(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testenv.Skip(t, "needs /proc")
	}
	h := newHarness(t, fakestrata.RootOptions{Mode: "ignore-term"}, func(c *Config) { c.StopTimeout = 300 * time.Millisecond })
	pid := pidOf(t, h.waitFor(events.ServerReady))
	if n := len(alive(pid)); n < 2 {
		t.Fatalf("want the server and its engine in the group, have %d processes", n)
	}
	h.sup.Stop(context.Background())
	ex := h.waitFor(events.ServerExited)
	if events.Get[events.ServerExitedDetails](ex).Code != -1 {
		t.Errorf("exit %v, want killed", ex.Details)
	}
	h.waitFor(events.ServerStopped)
	if left := alive(pid); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

func TestRestartCommand(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{}, nil)
	first := pidOf(t, h.waitFor(events.ServerReady))
	h.sup.Restart(context.Background())
	if ex := h.waitFor(events.ServerExited); !events.Get[events.ServerExitedDetails](ex).Expected {
		t.Errorf("exit %v", ex.Details)
	}
	if second := pidOf(t, h.waitFor(events.ServerReady)); second == first {
		t.Error("same pid after a restart")
	}
	if n := h.count(events.ServerRestarting); n != 0 {
		t.Errorf("a requested restart counted as a crash restart (%d)", n)
	}
}

func TestEngineLogRelayLines(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{}, nil)
	h.waitFor(events.ServerReady)
	h.waitEngineLogCache() // the engine has written its line: the log is ours now
	f, err := os.OpenFile(h.root.Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A line in the form an older relay wrote its events in: words in the
	// log (its owner may write anything there), never a report.
	fmt.Fprintln(f, `strata-companion-event: {"kind":"remote.unreachable","message":"pc2: connection refused","details":{"host":"pc2"}}`)
	fmt.Fprint(f, "strata-vision: warmed up at 1024 ")
	f.Sync()
	fmt.Fprintln(f, "image tokens") // a line written in two parts is read whole
	f.Close()
	if e := h.waitFor(events.EncoderReady); events.Get[events.EncoderReadyDetails](e).MaxTokens != 1024 {
		t.Errorf("encoder event %+v", e)
	}
	for _, k := range h.kinds() {
		if k == string(events.RemoteUnreachable) {
			t.Error("a relay-event line in the engine log became an event")
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := DefaultBackoff(i + 1); got != w {
			t.Errorf("DefaultBackoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestMissingInstallFailsWithAReason(t *testing.T) {
	bus := events.NewBus(10)
	dir := t.TempDir()
	s, err := New(Config{StrataRoot: dir, ConfigPath: filepath.Join(dir, "strata-x.json"), Events: bus})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	evs, _, _ := bus.Wait(context.Background(), 0)
	cancel()
	<-done
	if len(evs) == 0 || evs[0].Kind != events.ServerFailed || !strings.Contains(evs[0].Message, "serve/server.py is missing") {
		t.Fatalf("events %+v", evs)
	}
}

// A server whose ready line is worded otherwise is found ready by /health.
func TestReadyFromHealthAlone(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Mode: "no-ready-line"}, nil)
	r := h.waitFor(events.ServerReady)
	if d := events.Get[events.ServerReadyDetails](r); d.Source.Source != "health" || d.Model != "strata-test" {
		t.Errorf("ready %v", r.Details)
	}
}

// A start asked while a stop is under way starts the server again after it.
func TestStartDuringStop(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{}, nil)
	h.waitFor(events.ServerReady)
	h.sup.Stop(context.Background())
	h.sup.Start(context.Background())
	h.waitFor(events.ServerExited)
	h.waitFor(events.ServerReady)
}

// Strata restarting its own engine is an event, not a server restart.
func TestEngineRestartLines(t *testing.T) {
	h := newHarness(t, fakestrata.RootOptions{Mode: "engine-restart-after=50ms"}, nil)
	h.waitFor(events.ServerReady)
	// The engine's restart may come before the server is announced ready
	// (the announcement waits for the port's owner check): both lines,
	// wherever they fell.
	got := h.waitAll(events.EngineRestarted, 2)
	if d := events.Get[events.EngineRestartedDetails](got[0]); d.EngineRunning || d.ExitCode != -9 {
		t.Errorf("first %+v", got[0])
	}
	if !events.Get[events.EngineRestartedDetails](got[1]).EngineRunning {
		t.Errorf("second %+v", got[1])
	}
	if n := h.count(events.ServerStarting); n != 1 {
		t.Errorf("%d server starts", n)
	}
}

func TestTailFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("a\nb\nc\n"), 0o644)
	if l, err := TailFile(p, 2); err != nil || strings.Join(l, ",") != "b,c" {
		t.Errorf("%v %v", l, err)
	}
	if l, _ := TailFile(p, 10); len(l) != 3 {
		t.Errorf("%v", l)
	}
	os.WriteFile(p, nil, 0o644)
	if l, err := TailFile(p, 5); err != nil || len(l) != 0 {
		t.Errorf("empty: %v %v", l, err)
	}
}

// A restart the user asked for is not logged as a crash: the log says the
// server stopped as asked, whatever code its exit carried.
func TestRequestedStopIsNotLoggedAsAnEnd(t *testing.T) {
	var logFile string
	h := newHarness(t, fakestrata.RootOptions{}, func(c *Config) { logFile = c.LogFile })
	h.waitFor(events.ServerReady)
	h.sup.Restart(context.Background())
	h.waitFor(events.ServerExited)
	h.waitFor(events.ServerReady)
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "the server stopped as asked") || strings.Contains(string(b), "the server ended") {
		t.Errorf("the log after a requested restart:\n%s", b)
	}
}

// TestRestartRemovesThePreviousRunsImageFolder: Strata leaves each run's
// strata-vision-* temp folder (its cached results) behind; when the
// supervisor starts the server again, the previous run's is removed, and
// nothing else: not the new run's, not one that was there before (another
// Strata's), not one holding other files.
func TestRestartRemovesThePreviousRunsImageFolder(t *testing.T) {
	enc := filepath.Join(t.TempDir(), "enc.sh")
	testenv.WriteExecutable(enc, []byte("#!/bin/sh\necho READY 8\nwhile read l; do [ \"$l\" = QUIT ] && exit 0; done\n"))
	var tmp string
	h := newHarness(t, fakestrata.RootOptions{Extra: map[string]any{
		"vision": map[string]any{"exe": enc, "mmproj": "/m.gguf", "model": "/x.gguf", "gpu": false},
	}}, func(c *Config) {
		tmp = filepath.Join(c.StrataRoot, "tmp") // where the stand-in install's server makes its temp folders
		c.Env = append(c.Env, "TMPDIR="+tmp)
	})
	h.waitFor(events.ServerReady)
	first := stratatmp.List(tmp)
	if len(first) != 1 {
		t.Fatalf("after the first start: %v", first)
	}
	// Another Strata's folder appears meanwhile, and one with a file that
	// is not a result: neither is the previous run's.
	os.MkdirAll(filepath.Join(tmp, "strata-vision-other123"), 0o700)
	os.WriteFile(filepath.Join(tmp, "strata-vision-other123", "notes.txt"), []byte("x"), 0o600)
	h.sup.Restart(context.Background())
	h.waitFor(events.ServerExited)
	h.waitFor(events.ServerReady)
	now := stratatmp.List(tmp)
	for name := range first {
		if _, left := now[name]; left {
			t.Errorf("the previous run's folder %s is still there: %v", name, now)
		}
	}
	if _, ok := now["strata-vision-other123"]; !ok || len(now) != 2 {
		t.Errorf("after the restart: %v; want the new run's and the other one", now)
	}
}
