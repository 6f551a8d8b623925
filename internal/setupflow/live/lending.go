package live

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/elevate"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Lending is this PC lending its GPU from the setup window: strata-service
// lend, lend code and lend stop, each run with an administrator's rights
// and waited for (internal/elevate: the UAC prompt on Windows, pkexec
// elsewhere, as the tray runs them). lend sets this PC up and starts the
// lender service, which goes on lending after the window closes; the window
// reads what the lender shows this account (internal/lendshown).
type Lending struct {
	// Exe is strata-service (default: beside this program, else PATH).
	Exe string
	// User is the lending account (default: the one running this window;
	// the elevated program may run as root or as an administrator's
	// account, so lend is told).
	User string
	// Run runs exe with args with an administrator's rights and waits
	// (default elevate.Run).
	Run func(ctx context.Context, exe string, args ...string) error
	// Shown reads the lender's view for this account (default
	// lendshown.Read).
	Shown func() (*lendshown.Shown, error)
}

func (l *Lending) run(ctx context.Context, args ...string) error {
	exe := l.Exe
	if exe == "" {
		exe = besideSelf("strata-service")
	}
	if !filepath.IsAbs(exe) {
		p, err := exec.LookPath(exe)
		if err != nil {
			return fmt.Errorf("strata-service is not beside this program: reinstall Strata Companion (%v)", err)
		}
		exe = p
	}
	run := l.Run
	if run == nil {
		run = elevate.Run
	}
	err := run(ctx, exe, args...)
	if errors.Is(err, elevate.ErrDeclined) {
		return fmt.Errorf("%w, so nothing was changed: try again and allow it", err)
	}
	return err
}

// Start sets this PC up to lend and starts the lender service, for this
// window's account.
func (l *Lending) Start(ctx context.Context) error {
	user := l.User
	if user == "" {
		a, err := account.Current()
		if err != nil {
			return err
		}
		user = a.Name
	}
	return l.run(ctx, "lend", "--user", user)
}

// NewCode has the lender show a new code (the old one stops working).
func (l *Lending) NewCode(ctx context.Context) error { return l.run(ctx, "lend", "code") }

// Stop ends lending and puts back what it changed.
func (l *Lending) Stop(ctx context.Context) error { return l.run(ctx, "lend", "stop") }

// Status is what the lender shows this account now.
func (l *Lending) Status() setupflow.LendStatus {
	read := l.Shown
	if read == nil {
		read = lendshown.Read
	}
	s, err := read()
	if err != nil {
		return setupflow.LendStatus{}
	}
	return setupflow.LendStatus{Lending: true, Name: s.Name, Code: s.Code, Expires: s.Expires, Paired: s.Paired}
}
