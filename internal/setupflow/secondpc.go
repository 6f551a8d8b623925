package setupflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// SecondPCStep is the Second PC page: how to reach that PC, its probe, the
// pairing (the companion's own key there) and the preparing (the encoder's
// files there), and the options that come with it. Everything it does to
// that PC goes through link (RemoteProber: Probe, Pair, Prepare, Unpair);
// it reads the chosen Strata install through install, and hands its probe
// to the recommendation through choice.
//
// Each operation runs as one of the flow's long operations on the Second
// PC page (s.begin); a pairing records itself with s.paired, which a new
// way of pairing (with a code) would use the same way.
type SecondPCStep struct {
	link    RemoteProber
	ask     ConfirmHostKey
	gate    gate
	install chosenInstall
	choice  remoteRecommender
	// changed tells the flow the choice changed (the Review is stale).
	changed func()

	mu      sync.Mutex
	target  RemoteTarget
	report  *RemoteReport
	trusted map[string]bool // fingerprints the user accepted in this run

	remote     *settings.Remote // paired (now or before)
	pairedHere bool             // paired in this wizard: Cancel undoes it
	prepared   bool
	opts       SecondPCOptions
}

// chosenInstall is the Strata install and config chosen (FindStep.Selected).
type chosenInstall interface {
	Selected() (Install, string, bool)
}

// remoteRecommender is the choice of placement as the second PC's probe
// informs it (ChoiceStep): it weighs the probe, and fills the report's
// picture time from its estimate.
type remoteRecommender interface {
	secondPCProbed(r *RemoteReport)
	secondPCForgotten()
}

func newSecondPCStep(g gate, link RemoteProber, ask ConfirmHostKey, install chosenInstall, choice remoteRecommender, changed func(), prev *settings.Settings) *SecondPCStep {
	s := &SecondPCStep{link: link, ask: ask, gate: g, install: install, choice: choice, changed: changed, trusted: map[string]bool{}}
	s.opts = SecondPCOptions{IdleStopS: DefaultIdleStopS, FallbackCPU: prev.FallbackCPU != nil && *prev.FallbackCPU}
	if prev.Remote != nil && prev.Remote.Host != "" {
		s.opts.IdleStopS = prev.Remote.IdleStopS
	}
	return s
}

// resume starts from the second PC a machine was set up with (nil: none).
func (s *SecondPCStep) resume(prev *settings.Remote) {
	if prev == nil || prev.Host == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := *prev
	s.remote = &r
	s.prepared = r.RemoteDir != ""
	s.target = RemoteTarget{Address: endpointString(r), User: r.User, UseAgent: true}
}

// begin starts one of this page's long operations.
func (s *SecondPCStep) begin(ctx context.Context, name string) (context.Context, func(), error) {
	return s.gate.begin(ctx, name, PageSecondPC)
}

// Suggestions are the Host entries of ~/.ssh/config.
func (s *SecondPCStep) Suggestions() []HostSuggestion { return s.link.Suggestions() }

// SetTarget sets how to reach the second PC; a new address forgets the last
// probe and pairing.
func (s *SecondPCStep) SetTarget(t RemoteTarget) {
	s.mu.Lock()
	moved := t.String() != s.target.String()
	if moved {
		s.report = nil
		if s.remote != nil && !s.pairedHere {
			s.remote = nil
			s.prepared = false
		}
	}
	s.target = t
	s.mu.Unlock()
	if moved {
		s.choice.secondPCForgotten()
	}
	s.changed()
}

// Target is the second PC as entered.
func (s *SecondPCStep) Target() RemoteTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target
}

// confirm asks the user about a host key once per run and fingerprint.
func (s *SecondPCStep) confirm(ctx context.Context, k HostKey) bool {
	s.mu.Lock()
	ok := s.trusted[k.Fingerprint]
	s.mu.Unlock()
	if ok {
		return true
	}
	if s.ask == nil || !s.ask(ctx, k) {
		return false
	}
	s.mu.Lock()
	s.trusted[k.Fingerprint] = true
	s.mu.Unlock()
	return true
}

// Probe reaches and measures the second PC.
func (s *SecondPCStep) Probe(ctx context.Context, progress func(Progress)) (*RemoteReport, error) {
	ctx, end, err := s.begin(ctx, "probe the second PC")
	if err != nil {
		return nil, err
	}
	defer end()
	t := s.Target()
	if strings.TrimSpace(t.Address) == "" {
		return nil, errors.New("type the second PC's address (a name or IP address) first")
	}
	t.Paired = s.pairedFor(t) // lend.go
	r, err := s.link.Probe(ctx, t, s.confirm, orNop(progress))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	s.choice.secondPCProbed(r) // before r is shown: it fills r.PictureSeconds
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report = r
	return r, nil
}

// Report is the last probe of the second PC (nil before one).
func (s *SecondPCStep) Report() *RemoteReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report
}

// Pair installs the companion's own key on the second PC, with the user's
// password or ssh agent (the target's); the probe must have run first.
func (s *SecondPCStep) Pair(ctx context.Context, progress func(Progress)) (*settings.Remote, error) {
	ctx, end, err := s.begin(ctx, "pair with the second PC")
	if err != nil {
		return nil, err
	}
	defer end()
	s.mu.Lock()
	t, rep := s.target, s.report
	s.mu.Unlock()
	if in, _, ok := s.install.Selected(); ok {
		t.StrataRoot = in.Root
	}
	if rep == nil {
		return nil, errors.New("probe the second PC first, so you can see whether it can read pictures")
	}
	r, err := s.link.Pair(ctx, t, s.confirm, orNop(progress))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	s.paired(r, rep)
	if ctx.Err() != nil { // cancelled after the key went in: Cancel/Back undo it
		return nil, ctx.Err()
	}
	return r, nil
}

// paired records a pairing made in this run with the PC rep describes: it
// is not prepared yet, and Cancel undoes it until Apply keeps it. The
// password, used once, is forgotten.
func (s *SecondPCStep) paired(r *settings.Remote, rep *RemoteReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target.Password = "" // used once; never kept longer than needed
	s.remote, s.pairedHere, s.prepared = r, true, false
	if r.OS == "" {
		r.OS, r.Arch = rep.OS, rep.Arch
	}
}

// Prepare copies what the second PC needs and checks its encoder starts.
func (s *SecondPCStep) Prepare(ctx context.Context, progress func(Progress)) error {
	ctx, end, err := s.begin(ctx, "prepare the second PC")
	if err != nil {
		return err
	}
	defer end()
	s.mu.Lock()
	r := s.remote
	s.mu.Unlock()
	in, cfg, ok := s.install.Selected()
	if r == nil {
		return errors.New("pair with the second PC first")
	}
	if !ok {
		return errors.New("choose a Strata install first")
	}
	nr, err := s.link.Prepare(ctx, r, in, cfg, orNop(progress))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.remote, s.prepared = nr, true
	s.mu.Unlock()
	s.changed()
	return nil
}

// State is the second PC's pairing as known now.
func (s *SecondPCStep) State() (r *settings.Remote, paired, prepared bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil {
		return nil, false, false
	}
	c := *s.remote
	return &c, true, s.prepared
}

// Options are the choices besides the PC itself, as they stand (from the
// settings at start).
func (s *SecondPCStep) Options() SecondPCOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts
}

// SetOptions changes them; they are written at Apply.
func (s *SecondPCStep) SetOptions(o SecondPCOptions) error {
	if o.IdleStopS < 0 || o.IdleStopS > settings.MaxIdleStopS {
		return fmt.Errorf("the idle stop must be between 0 (keep the encoder running) and %d seconds (a week)", settings.MaxIdleStopS)
	}
	s.mu.Lock()
	same := s.opts == o
	s.opts = o
	s.mu.Unlock()
	if !same {
		s.changed()
	}
	return nil
}

// Wake is the second PC's Wake-on-LAN state as known now.
func (s *SecondPCStep) Wake() WakeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil {
		return WakeState{}
	}
	return WakeState{Paired: s.remote.Host != "", MAC: s.remote.MAC, Enabled: s.remote.Wake != nil && s.remote.Wake.Enabled}
}

// complete says what the Second PC page still lacks (nil: nothing).
func (s *SecondPCStep) complete() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.remote == nil:
		return errors.New("probe and pair the second PC first")
	case !s.prepared:
		return errors.New("prepare the second PC first (it copies the encoder's files there)")
	}
	return nil
}

// keepPairing makes this run's pairing part of the setup (Apply succeeded):
// Cancel no longer undoes it.
func (s *SecondPCStep) keepPairing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pairedHere = false
}

// undoPairing removes the key this run put on the second PC (Cancel before
// Apply); it says nothing when this run paired nothing.
func (s *SecondPCStep) undoPairing() CancelResult {
	s.mu.Lock()
	r, here := s.remote, s.pairedHere
	s.pairedHere = false
	s.mu.Unlock()
	var res CancelResult
	if !here || r == nil {
		return res
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := s.link.Unpair(ctx, r)
	cancel()
	if err != nil {
		res.Changed = true
		res.Messages = append(res.Messages, "The companion's key could not be removed from the second PC: "+err.Error()+". Run \"strata-service remote unpair\" to remove it.")
	} else {
		res.Messages = append(res.Messages, "The key this setup put on the second PC was removed again.")
	}
	return res
}

// host is the paired PC as Strata's config names it ([user@]host[:port]),
// "" when none is paired.
func (s *SecondPCStep) host() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil {
		return ""
	}
	h := endpointString(*s.remote)
	if s.remote.User != "" {
		h = s.remote.User + "@" + h
	}
	return h
}

// forSettings is the second PC as the settings keep it when pictures go to
// p: the paired PC with its idle stop (nil: none to keep; a prepared PC is
// kept even when p is elsewhere), and the CPU fallback.
func (s *SecondPCStep) forSettings(p settings.Placement) (*settings.Remote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil || (p != settings.PlacementRemote && !s.prepared) {
		return nil, s.opts.FallbackCPU
	}
	r := *s.remote
	r.IdleStopS = s.opts.IdleStopS
	return &r, s.opts.FallbackCPU
}

// secondPCWords is the second PC as the Review's summary says it.
type secondPCWords struct {
	// name is the target with its GPU: "sam@192.168.1.20 (RTX 3060)".
	name string
	// pictureSeconds is its probe's estimate, 0 when none.
	pictureSeconds float64
	// options are the idle stop and the fallback: "; its encoder stops ...".
	options string
}

func (s *SecondPCStep) summary() secondPCWords {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := secondPCWords{name: s.target.String(), options: s.opts.describe()}
	if s.report != nil {
		w.name += " (" + s.report.GPUName() + ")"
		w.pictureSeconds = s.report.PictureSeconds
	}
	return w
}

func endpointString(r settings.Remote) string {
	s := r.Host
	if r.Port != 0 && r.Port != 22 {
		s = fmt.Sprintf("%s:%d", r.Host, r.Port)
		if strings.Contains(r.Host, ":") {
			s = fmt.Sprintf("[%s]:%d", r.Host, r.Port)
		}
	}
	return s
}

// SecondPCOptions are the second-PC page's choices besides the PC itself.
type SecondPCOptions struct {
	// IdleStopS stops the second PC's encoder after this many seconds
	// without a picture, giving that PC its VRAM back (0: keep it running).
	IdleStopS int
	// FallbackCPU reads a picture on this PC's CPU when the second PC cannot
	// be reached (off: the picture fails with the reason).
	FallbackCPU bool
}

// DefaultIdleStopS is the idle stop offered on a machine that never chose one.
const DefaultIdleStopS = 600

// describe is the options for the Review page's summary.
func (o SecondPCOptions) describe() string {
	s := "; its encoder stops after " + settings.FormatIdleStop(o.IdleStopS) + " without a picture"
	if o.IdleStopS == 0 {
		s = "; its encoder keeps running between pictures"
	}
	if o.FallbackCPU {
		return s + "; when that PC is off, " + settings.PlacementCPU.Pictures("")
	}
	return s + "; when that PC is off, a picture fails with the reason"
}

// WakeState says whether the second PC can be woken: the MAC address pairing
// recorded ("" when none could be found, or nothing is paired) and whether
// Wake-on-LAN is switched on in the settings.
type WakeState struct {
	// Paired: a second PC is paired (before that there is nothing to wake).
	Paired  bool
	MAC     string
	Enabled bool
}

// Describe says it for a person: whether the second PC can be woken.
func (w WakeState) Describe() string {
	switch {
	case !w.Paired && w.MAC == "":
		return "Not set up yet: pairing records that PC's network card, so it can be woken when it sleeps."
	case w.MAC == "":
		return "Not set up: pairing found no network card address to wake that PC with (pair again over its wired network to record one)."
	case w.Enabled:
		return "On: the relay wakes that PC (" + w.MAC + ") when a picture comes and it is off."
	default:
		return "Possible, not switched on: that PC's network card " + w.MAC + " is recorded (its BIOS must allow Wake-on-LAN)."
	}
}
