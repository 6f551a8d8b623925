package setupflow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/internal/testenv"
)

// fakeLending is a lender whose status the test sets; Start waits for
// release when hold is set.
type fakeLending struct {
	mu       sync.Mutex
	st       setupflow.LendStatus
	startErr error
	hold     chan struct{}
	calls    []string
}

func (l *fakeLending) set(st setupflow.LendStatus) { l.mu.Lock(); l.st = st; l.mu.Unlock() }

func (l *fakeLending) Status() setupflow.LendStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

func (l *fakeLending) Start(ctx context.Context) error {
	l.mu.Lock()
	l.calls = append(l.calls, "start")
	hold := l.hold
	l.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startErr
}

func (l *fakeLending) NewCode(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "code")
	return nil
}

func (l *fakeLending) Stop(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "stop")
	l.st = setupflow.LendStatus{}
	return nil
}

func lendFlow(t *testing.T, l setupflow.Lending) *setupflow.Flow {
	t.Helper()
	d := demo.NewWorld("/opt/strata").Deps(yes)
	d.Lending = l
	f, err := setupflow.New(ctx, d, setupflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// What the lending view says in each state, and which buttons it offers.
func TestLendViewStates(t *testing.T) {
	l := &fakeLending{}
	f := lendFlow(t, l)
	s := f.Lend
	now := time.Date(2026, 12, 5, 14, 50, 30, 0, time.Local)

	v := s.View(now)
	if v.State != setupflow.LendOff || !v.CanStart || v.CanStop || v.CanNewCode || !strings.Contains(v.Text, "administrator's permission") || !strings.Contains(v.Text, "Stop lending undoes") {
		t.Errorf("before lending: %+v", v)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The code, for the other PC: where to type it, and how long it works.
	exp := now.Add(9*time.Minute + 40*time.Second)
	l.set(setupflow.LendStatus{Lending: true, Name: "gaming-laptop", Code: "HXK4-9TQM", Expires: exp, Paired: []string{"strata-pc"}})
	v = s.View(now)
	if v.State != setupflow.LendShowing || v.Code != "HXK4-9TQM" || v.CanStart || !v.CanNewCode || !v.CanStop {
		t.Errorf("showing: %+v", v)
	}
	for _, want := range []string{`choose "A second PC"`, "pick gaming-laptop", "for 9 more minutes", "until " + exp.Format("15:04")} {
		if !strings.Contains(v.Text, want) {
			t.Errorf("the code's words %q lack %q", v.Text, want)
		}
	}
	if !strings.Contains(v.Paired, "strata-pc") || !strings.Contains(v.Paired, "Stop lending removes their keys") {
		t.Errorf("paired: %q", v.Paired)
	}
	if v = s.View(exp.Add(-30 * time.Second)); !strings.Contains(v.Text, "less than a minute") {
		t.Errorf("in its last minute: %q", v.Text)
	}

	// Expired (or used): New code, no code shown.
	if v = s.View(exp); v.State != setupflow.LendNoCode || v.Code != "" || !v.CanNewCode {
		t.Errorf("expired: %+v", v)
	}

	// Stopped: off, in words that say what was undone.
	l.set(setupflow.LendStatus{Lending: true, Code: "HXK4-9TQM", Expires: exp})
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if v = s.View(now); v.State != setupflow.LendOff || !strings.Contains(v.Text, "no longer lends") || v.Err != "" {
		t.Errorf("stopped: %+v", v)
	}
	if err := s.NewCode(ctx); err != nil || strings.Join(l.calls, " ") != "start stop code" {
		t.Errorf("calls %q, %v", l.calls, err)
	}
}

// One action at a time; a refused start says why and offers it again.
func TestLendOneActionAtATime(t *testing.T) {
	l := &fakeLending{hold: make(chan struct{})}
	f := lendFlow(t, l)
	s := f.Lend
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	testenv.WaitFor(t, 5*time.Second, "the start to begin", func() bool { return s.View(time.Now()).Busy != "" })
	v := s.View(time.Now())
	if v.CanStart || v.CanStop || v.CanNewCode || !strings.Contains(v.Busy, "permission") {
		t.Errorf("while starting: %+v", v)
	}
	if err := s.Stop(ctx); !errors.Is(err, setupflow.ErrBusy) {
		t.Errorf("Stop while starting: %v", err)
	}
	l.mu.Lock()
	l.startErr = errors.New("Windows did not get an administrator's permission, so nothing was changed: press Start lending again and answer Yes")
	l.mu.Unlock()
	close(l.hold)
	if err := testenv.Receive(t, done, 5*time.Second, "the start to end"); err == nil {
		t.Fatal("a refused start returned no error")
	}
	if v = s.View(time.Now()); v.Busy != "" || !v.CanStart || !strings.Contains(v.Err, "answer Yes") {
		t.Errorf("after a refused start: %+v", v)
	}
}

func TestLendNotOffered(t *testing.T) {
	if lendFlow(t, nil).Lend.Available() {
		t.Error("lending offered without a Lending")
	}
}
