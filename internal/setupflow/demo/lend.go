package demo

import (
	"context"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Lenders are the PCs that lend their GPU on the demo network: the second
// PC of the demo (its RTX 3060 laptop GPU) and an office PC.
var Lenders = []lend.Announcement{
	{Name: "gaming-laptop", Host: "192.168.1.20", Addrs: []string{"192.168.1.20"}, Port: 22, PairPort: lend.DefaultPairPort,
		GPUs: []lend.GPU{{Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144}}, AgentVersion: "0.9.3", HostKey: HostKey.Fingerprint, OS: "windows"},
	{Name: "office-pc", Host: "192.168.1.31", Addrs: []string{"192.168.1.31"}, Port: 22, PairPort: lend.DefaultPairPort,
		GPUs: []lend.GPU{{Name: "NVIDIA RTX A2000 12GB", TotalMiB: 12282}}, AgentVersion: "0.9.3", HostKey: "SHA256:q2b7Pj0yJ6vYz3d8WkQ1mN4tR9sLx5cVe2hF7gA0uBk", OS: "linux"},
}

// LendCode is the code the demo's lenders show (and this PC shows when it
// lends); LendCode2 is the one New code gives.
const (
	LendCode  lend.Code = "HXK49TQM"
	LendCode2 lend.Code = "R7WQ2MKD"
)

// ---- Lenders: this PC pairs with one by its code ----

type lenders struct{ w *World }

func (l lenders) Find(ctx context.Context) ([]lend.Announcement, error) {
	l.w.record("find-lenders")
	if err := l.w.wait(ctx, 3); err != nil {
		return nil, err
	}
	if err := l.w.fail("find-lenders"); err != nil {
		return nil, err
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return append([]lend.Announcement(nil), l.w.Found...), nil
}

// PairWithCode takes LendCode; any other code is refused as a lender
// refuses a wrong one.
func (l lenders) PairWithCode(ctx context.Context, p setupflow.CodePairing, progress func(setupflow.Progress)) (*settings.Remote, error) {
	l.w.record("pair-code %s:%d %s hostkey=%s root=%s", p.Target.Host, p.Target.PairPort, p.Code, p.Target.HostKey, p.StrataRoot)
	if err := l.w.steps(ctx, "pair", []string{"Checking " + p.Target.String() + "'s host key against its announcement", "Pairing with " + p.Target.String() + " using the code"}, progress); err != nil {
		return nil, err
	}
	if err := l.w.fail("pair-code"); err != nil {
		return nil, err
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	if p.Code != LendCode {
		l.w.Lent.wrong++
		return nil, &lend.RefusedError{Kind: lend.RefusedWrong, TriesLeft: lend.MaxTries - l.w.Lent.wrong}
	}
	l.w.Paired = true
	return &settings.Remote{Host: p.Target.Host, Port: 22, User: "sam", HostKey: HostKey.Type + " AAAAC3NzaC1lZDI1NTE5AAAAIDemoKey",
		KeyFile: "/etc/strata-companion/secrets/relay_ed25519", MAC: DemoMAC, OS: "windows", Arch: "amd64", RemoteDir: `C:\Users\sam\strata-companion`}, nil
}

// ---- Lending: this PC lends its GPU ----

// LentState is the demo PC's own lending.
type LentState struct {
	On      bool // lending set up (the lender's view exists)
	Code    lend.Code
	Expires time.Time
	Paired  []string
	wrong   int
}

type lending struct{ w *World }

// Start plays the lender's setup (two delays), then shows LendCode.
func (l lending) Start(ctx context.Context) error {
	l.w.record("lend-start")
	if err := l.w.wait(ctx, 2); err != nil {
		return err
	}
	if err := l.w.fail("lend-start"); err != nil {
		return err
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.w.Lent.On, l.w.Lent.Code, l.w.Lent.Expires = true, LendCode, time.Now().Add(lend.DefaultValid)
	return nil
}

func (l lending) NewCode(ctx context.Context) error {
	l.w.record("lend-code")
	if err := l.w.wait(ctx, 1); err != nil {
		return err
	}
	if err := l.w.fail("lend-code"); err != nil {
		return err
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.w.Lent.Code, l.w.Lent.Expires = LendCode2, time.Now().Add(lend.DefaultValid)
	return nil
}

func (l lending) Stop(ctx context.Context) error {
	l.w.record("lend-stop")
	if err := l.w.wait(ctx, 2); err != nil {
		return err
	}
	if err := l.w.fail("lend-stop"); err != nil {
		return err
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.w.Lent = LentState{}
	return nil
}

func (l lending) Status() setupflow.LendStatus {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	s := l.w.Lent
	st := setupflow.LendStatus{Lending: s.On, Name: "gaming-laptop", Paired: append([]string(nil), s.Paired...)}
	if s.On && s.Code != "" && time.Now().Before(s.Expires) {
		st.Code, st.Expires = s.Code.String(), s.Expires
	}
	return st
}
