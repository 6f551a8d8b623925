package setupflow

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// Lending is this PC lending its GPU to the PC that runs Strata: the setup's
// role "Lend this PC's GPU to another PC", for a PC (a laptop) that has no
// Strata. The lender is strata-service lend (internal/lender), which
// changes the ssh server and another account's files, so it runs with an
// administrator's rights; it leaves the lender service (strata-lender)
// lending after this window closes. This window only runs it and reads
// what it shows this account (internal/lendshown). live.Lending runs it.
type Lending interface {
	// Start starts lending: the lender's setup and its service (Windows
	// asks for an administrator's permission). It returns when that ended.
	Start(ctx context.Context) error
	// NewCode has the lender show a new code (the old one stops working).
	NewCode(ctx context.Context) error
	// Stop ends lending and undoes what it changed; it returns when done.
	Stop(ctx context.Context) error
	// Status is lending as this account sees it now. It needs no rights
	// and is cheap: the window asks every second.
	Status() LendStatus
}

// LendRoleLabel is the role as the setup's first page offers it.
const LendRoleLabel = "Lend this PC's GPU to another PC"

// LendStatus is lending as this account sees it.
type LendStatus struct {
	// Lending: this PC lends its GPU for this account (the lender keeps a
	// view of it for the account: lender.ReadShown).
	Lending bool
	// Name is this PC's name on the network.
	Name string
	// Code is the code to show ("ABCD-EFGH"); "" when none is valid now.
	Code    string
	Expires time.Time
	// Paired names the PCs paired so far.
	Paired []string
}

// LendState is what the lending view shows.
type LendState int

const (
	// LendOff: not lending; Start lending.
	LendOff LendState = iota
	// LendShowing: a code to type on the other PC.
	LendShowing
	// LendNoCode: lending, but no code is valid now; New code.
	LendNoCode
)

// LendView is the lending view's content: the GUI shows it as it is.
type LendView struct {
	State LendState
	// Code is the code to show big ("" when none).
	Code string
	// Text says what it means and what to do.
	Text string
	// Paired names the PCs paired so far, in a sentence ("" when none).
	Paired string
	// Err is the last failure, in words that say what to do.
	Err string
	// Busy says what runs now ("" when nothing does).
	Busy string
	// The buttons that make sense now.
	CanStart, CanNewCode, CanStop bool
}

// LendStep is the lending role's logic: one action at a time, and what the
// view shows from the lender's status.
type LendStep struct {
	l Lending

	mu      sync.Mutex
	busy    string
	err     error
	stopped bool // Stop succeeded in this window
}

func newLendStep(l Lending) *LendStep { return &LendStep{l: l} }

// Available reports whether this setup can lend this PC's GPU.
func (s *LendStep) Available() bool { return s != nil && s.l != nil }

// Busy words.
const (
	lendBusyStart = "Starting lending: allow it when asked for an administrator's permission; setting this PC up can take a few minutes"
	lendBusyCode  = "Getting a new pairing code: allow it when asked for an administrator's permission"
	lendBusyStop  = "Stopping lending and putting this PC back as it was: allow it when asked for an administrator's permission"
)

func (s *LendStep) run(ctx context.Context, busy string, fn func(context.Context) error) error {
	if !s.Available() {
		return fmt.Errorf("this setup cannot lend this PC's GPU")
	}
	s.mu.Lock()
	if s.busy != "" {
		s.mu.Unlock()
		return ErrBusy
	}
	s.busy, s.err = busy, nil
	s.mu.Unlock()
	err := fn(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy, s.err = "", err
	if err == nil {
		s.stopped = busy == lendBusyStop
	}
	return err
}

// Start starts lending (the lender's setup, then its pairing service).
func (s *LendStep) Start(ctx context.Context) error { return s.run(ctx, lendBusyStart, s.l.Start) }

// NewCode shows a new code (the old one stops working).
func (s *LendStep) NewCode(ctx context.Context) error { return s.run(ctx, lendBusyCode, s.l.NewCode) }

// Stop ends lending and undoes what it changed.
func (s *LendStep) Stop(ctx context.Context) error { return s.run(ctx, lendBusyStop, s.l.Stop) }

// View is what the lending view shows at now.
func (s *LendStep) View(now time.Time) LendView {
	if !s.Available() {
		return LendView{Text: "This setup cannot lend this PC's GPU."}
	}
	st := s.l.Status()
	s.mu.Lock()
	busy, err, stopped := s.busy, s.err, s.stopped
	s.mu.Unlock()
	v := LendView{Busy: busy}
	if err != nil {
		v.Err = err.Error()
	}
	name := st.Name
	if name == "" {
		name = "this PC"
	}
	switch {
	case !st.Lending:
		v.State, v.CanStart = LendOff, true
		v.Text = lendOffWords()
		if stopped {
			v.Text = "This PC no longer lends its GPU: the paired PCs' keys are removed, the companion's agent is gone, and the ssh server is as it was before lending."
		}
	case st.Code == "" || !now.Before(st.Expires):
		v.State, v.CanNewCode, v.CanStop = LendNoCode, true, true
		v.Text = "No pairing code is valid now: it expired, or it paired a PC already (each code pairs one PC once). Press New code for another."
	default:
		v.State, v.Code, v.CanNewCode, v.CanStop = LendShowing, st.Code, true, true
		v.Text = fmt.Sprintf("On the PC that runs Strata, open Strata Companion's setup and choose %q; on the Second PC page, pick %s in the list and type this code. It works once, for %s (until %s).",
			settings.PlacementRemote.Info().Label, name, remaining(st.Expires.Sub(now)), st.Expires.Local().Format("15:04"))
	}
	if len(st.Paired) > 0 {
		v.Paired = "Paired so far: " + strings.Join(st.Paired, ", ") + ". They read pictures on this PC's GPU while it is on; Stop lending removes their keys."
	}
	if busy != "" {
		v.CanStart, v.CanNewCode, v.CanStop = false, false, false
	}
	return v
}

// remaining is a code's time left in words: "9 more minutes".
func remaining(d time.Duration) string {
	switch m := int(d / time.Minute); {
	case m < 1:
		return "less than a minute"
	case m == 1:
		return "1 more minute"
	default:
		return fmt.Sprintf("%d more minutes", m)
	}
}

// lendOffWords say what Start lending does, in this system's words.
func lendOffWords() string {
	server, reach := "the system's OpenSSH server", "lets the other PC reach it"
	if runtime.GOOS == "windows" {
		server, reach = "Windows' OpenSSH Server", "lets only the local network reach it (the firewall's Private profile)"
	}
	return "Lending lets the PC that runs Strata read its pictures on this PC's graphics card, over the network. " +
		"Start lending asks for an administrator's permission once, then turns on this PC's ssh server where none runs (" + server + ") and " + reach +
		", installs the companion's agent for your account, and shows a pairing code to type on the other PC. Stop lending undoes all of it."
}
