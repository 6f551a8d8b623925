package setupflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/settings"
)

// Lenders are the PCs on this network that lend their GPU (the setup's role
// "Lend this PC's GPU to another PC", or strata-service lend, there), and
// pairing with one by the code it shows: the Second PC page's first way in.
// live.Remote implements it with internal/lend and internal/pairing, the
// code the command line's remote find and remote pair --code run.
type Lenders interface {
	// Find lists the lenders that answer within a few seconds, one per PC
	// name and host key (live: lend.Browse for about 3 s).
	Find(ctx context.Context) ([]lend.Announcement, error)
	// PairWithCode pairs with p.Target using p.Code alone: the companion's
	// key goes there (it may run only the companion's agent), the host key
	// is pinned, and the second PC is recorded in memory only, as after
	// RemoteProber.Pair (the flow writes it at Apply; Cancel unpairs).
	PairWithCode(ctx context.Context, p CodePairing, progress func(Progress)) (*settings.Remote, error)
}

// CodePairing is one pairing by code.
type CodePairing struct {
	Target pairing.CodeTarget
	Code   lend.Code
	// StrataRoot is the chosen Strata install (the step fills it): its
	// encoder build is allowed on that PC, as after Pair.
	StrataRoot string
}

// FoundPC is a lender found on the network, as the page lists it.
type FoundPC struct {
	lend.Announcement
	// Paired: this PC is paired with it already (the second PC of the
	// settings, or one paired in this run).
	Paired bool
}

// GPUName is its first GPU's name, or "no NVIDIA GPU".
func (p FoundPC) GPUName() string {
	if len(p.GPUs) == 0 {
		return "no NVIDIA GPU"
	}
	return p.GPUs[0].Name
}

// VRAM is its first GPU's memory, "6.0 GB VRAM" ("" without a GPU).
func (p FoundPC) VRAM() string {
	if len(p.GPUs) == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f GB VRAM", float64(p.GPUs[0].TotalMiB)/1024)
}

// Describe is the PC in one line: "gaming-laptop: NVIDIA GeForce RTX 3060
// Laptop GPU, 6.0 GB VRAM (192.168.1.20), already paired".
func (p FoundPC) Describe() string {
	s := p.Name + ": " + p.GPUName()
	if v := p.VRAM(); v != "" {
		s += ", " + v
	}
	if n := len(p.GPUs); n > 1 {
		s += fmt.Sprintf(" (and %d more GPU)", n-1)
	}
	if p.Host != "" && p.Host != p.Name {
		s += " at " + p.Host
	}
	if p.Paired {
		s += ", already paired"
	}
	return s
}

// Target is the PC to pair with: where it answers and the host key it
// announced, which pairing checks before anything is sent.
func (p FoundPC) Target() pairing.CodeTarget {
	return pairing.CodeTarget{Name: p.Name, Host: p.Host, PairPort: p.PairPort, SSHPort: p.Port, HostKey: p.HostKey}
}

// CodeStep is pairing by code on the Second PC page: the lenders found on
// the network, and a pairing with one of them (or with an address typed,
// when none is found). The pairing made is the Second PC page's own
// (SecondPCStep.pairedByCode), after which the probe and the prepare run
// as after a pairing by password.
type CodeStep struct {
	lenders Lenders
	gate    gate
	install chosenInstall
	pc      *SecondPCStep

	mu       sync.Mutex
	found    []FoundPC
	searched bool
}

func newCodeStep(g gate, l Lenders, install chosenInstall, pc *SecondPCStep) *CodeStep {
	return &CodeStep{lenders: l, gate: g, install: install, pc: pc}
}

// Available reports whether this setup can look for lenders at all.
func (c *CodeStep) Available() bool { return c != nil && c.lenders != nil }

// Find looks for the PCs that lend their GPU on this network, marking the
// one paired already.
func (c *CodeStep) Find(ctx context.Context) ([]FoundPC, error) {
	if !c.Available() {
		return nil, errors.New("this setup cannot look for PCs on the network: type the second PC's address")
	}
	ctx, end, err := c.gate.begin(ctx, "look for PCs that lend their GPU", PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	list, err := c.lenders.Find(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("could not look for PCs on this network (%v): type the second PC's address", err)
	}
	known := c.pc.known()
	found := make([]FoundPC, 0, len(list))
	for _, a := range list {
		found = append(found, FoundPC{Announcement: a, Paired: samePC(a, known)})
	}
	c.mu.Lock()
	c.found, c.searched = found, true
	c.mu.Unlock()
	return append([]FoundPC(nil), found...), nil
}

// Found is the last Find's list; searched is false before one finished.
func (c *CodeStep) Found() (found []FoundPC, searched bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]FoundPC(nil), c.found...), c.searched
}

// Typed is the PC at an address typed by hand: a name or IP address, with
// the pairing port when it is not the usual one. A PC found under that
// name or address is taken as found (with the host key it announced).
func (c *CodeStep) Typed(address string) (pairing.CodeTarget, error) {
	host, port, err := pairing.ParseCodeAddress(address)
	if err != nil {
		return pairing.CodeTarget{}, err
	}
	if port == 0 {
		found, _ := c.Found()
		for _, p := range found {
			if strings.EqualFold(p.Name, host) || p.Host == host {
				return p.Target(), nil
			}
		}
		port = lend.DefaultPairPort
	}
	return pairing.CodeTarget{Name: host, Host: host, PairPort: port}, nil
}

// Pair pairs with t by the code typed as a person types it (case, spaces
// and dashes do not matter). A code that is not a code, or one that PC
// refuses, comes back in internal/lend's words, which say what to do.
func (c *CodeStep) Pair(ctx context.Context, t pairing.CodeTarget, typed string, progress func(Progress)) (*settings.Remote, error) {
	if !c.Available() {
		return nil, errors.New("this setup cannot pair by code: type the second PC's address and sign in with ssh")
	}
	if t.Host == "" {
		return nil, errors.New("pick the PC in the list, or type its address")
	}
	code, err := lend.ParseCode(typed)
	if err != nil {
		return nil, err
	}
	ctx, end, err := c.gate.begin(ctx, "pair with the second PC by its code", PageSecondPC)
	if err != nil {
		return nil, err
	}
	defer end()
	p := CodePairing{Target: t, Code: code}
	if in, _, ok := c.install.Selected(); ok {
		p.StrataRoot = in.Root
	}
	r, err := c.lenders.PairWithCode(ctx, p, orNop(progress))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.pc.pairedByCode(r)
	c.mu.Lock()
	for i := range c.found {
		c.found[i].Paired = samePC(c.found[i].Announcement, r)
	}
	c.mu.Unlock()
	if ctx.Err() != nil { // cancelled after the key went in: Cancel/Back undo it
		return nil, ctx.Err()
	}
	return r, nil
}

// samePC reports whether the lender a is the paired PC r: the host key it
// announces is r's, or (no key to compare) it answers at r's address.
func samePC(a lend.Announcement, r *settings.Remote) bool {
	if r == nil || r.Host == "" {
		return false
	}
	if a.HostKey != "" && r.HostKey != "" {
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey)); err == nil {
			return ssh.FingerprintSHA256(k) == a.HostKey
		}
	}
	port := r.Port
	if port == 0 {
		port = 22
	}
	if a.Port != port {
		return false
	}
	for _, h := range append([]string{a.Host}, a.Addrs...) {
		if h == r.Host {
			return true
		}
	}
	return false
}

// ---- The Second PC page's side ----

// known is the second PC paired now (nil: none).
func (s *SecondPCStep) known() *settings.Remote {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil {
		return nil
	}
	r := *s.remote
	return &r
}

// pairedByCode records a pairing by code made in this run: not prepared
// yet, not probed, and undone by Cancel until Apply keeps it. The target
// becomes the paired PC, so the probe that follows signs in with the
// companion's own key (pairedFor).
func (s *SecondPCStep) pairedByCode(r *settings.Remote) {
	s.mu.Lock()
	s.remote, s.pairedHere, s.prepared = r, true, false
	s.report = nil
	s.target = RemoteTarget{Address: endpointString(*r), User: r.User, UseAgent: true}
	s.mu.Unlock()
	s.choice.secondPCForgotten() // the estimate waits for this PC's probe
	s.changed()
}

// pairedFor is the paired second PC when t names it (the companion's key
// is one more way to sign in there, and the only one after a pairing by
// code), else nil.
func (s *SecondPCStep) pairedFor(t RemoteTarget) *settings.Remote {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote == nil || s.remote.Host == "" {
		return nil
	}
	addr, user := t.Address, t.User
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		user, addr = addr[:i], addr[i+1:]
	}
	if addr != endpointString(*s.remote) || (user != "" && user != s.remote.User) {
		return nil
	}
	r := *s.remote
	return &r
}
