package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	kservice "github.com/kardianos/service"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/lender"
	"github.com/strata-companion/companion/internal/locations"
)

// fakeService plays a service manager's view of the lender service.
type fakeService struct {
	cfg       *kservice.Config
	calls     []string
	installed bool
	running   bool
	startErr  error
	onStart   func() // what the started service does (its own setup)
}

func (f *fakeService) Run() error     { return nil }
func (f *fakeService) Restart() error { return nil }
func (f *fakeService) Start() error {
	f.calls = append(f.calls, "start")
	if f.startErr != nil {
		return f.startErr
	}
	f.running = true
	if f.onStart != nil {
		f.onStart()
	}
	return nil
}
func (f *fakeService) Stop() error { f.calls = append(f.calls, "stop"); f.running = false; return nil }
func (f *fakeService) Install() error {
	f.calls = append(f.calls, "install")
	f.installed = true
	return nil
}
func (f *fakeService) Uninstall() error {
	f.calls = append(f.calls, "uninstall")
	f.installed = false
	return nil
}
func (f *fakeService) String() string                                     { return f.cfg.Name }
func (f *fakeService) Platform() string                                   { return "fake" }
func (f *fakeService) Logger(chan<- error) (kservice.Logger, error)       { return nil, nil }
func (f *fakeService) SystemLogger(chan<- error) (kservice.Logger, error) { return nil, nil }
func (f *fakeService) Status() (kservice.Status, error) {
	switch {
	case !f.installed:
		return kservice.StatusUnknown, kservice.ErrNotInstalled
	case f.running:
		return kservice.StatusRunning, nil
	}
	return kservice.StatusStopped, nil
}

// withLenderManager makes the lender service's manager f (works: whether
// it can run services) for the test.
func withLenderManager(t *testing.T, f *fakeService, works bool) {
	t.Helper()
	oldS, oldM := lenderServices, lenderManager
	t.Cleanup(func() { lenderServices, lenderManager = oldS, oldM })
	lenderServices = func(c *kservice.Config) (kservice.Service, error) { f.cfg = c; return f, nil }
	lenderManager = func() (bool, string) {
		if !works {
			return false, "this system's first process is sh, not a service manager: a container?"
		}
		return true, ""
	}
}

// writeRecord writes a lending record with code c (no account: the view
// for an account is the lender's business, not this test's).
func writeRecord(t *testing.T, c lend.Code) *lender.Record {
	t.Helper()
	r := &lender.Record{Name: "gpu-laptop", SSHPort: 22, PairPort: lend.DefaultPairPort,
		Code: lend.State{Code: c, Expires: time.Now().Add(10 * time.Minute).Truncate(time.Second), TriesLeft: lend.MaxTries}}
	if _, err := locations.EnsureDir(locations.SecretsDir); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(lender.RecordFile(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.User = "alice"
	return r
}

func TestLenderServiceArgs(t *testing.T) {
	r := &lender.Record{User: "alice", Name: "gaming-laptop", SSHPort: 22, PairPort: lend.DefaultPairPort}
	if got := strings.Join(lenderArgs(lender.Options{}, r), " "); got != "lend --foreground --user alice" {
		t.Errorf("defaults: %s", got)
	}
	r.SSHPort, r.PairPort = 2222, 7400
	o := lender.Options{Name: "gaming-laptop", AgentBinary: "/opt/relay", Valid: 30 * time.Minute}
	want := "lend --foreground --user alice --name gaming-laptop --ssh-port 2222 --pair-port 7400 --agent-binary /opt/relay --code-valid 30m0s"
	if got := strings.Join(lenderArgs(o, r), " "); got != want {
		t.Errorf("lend's own choices: %s\nwant %s", got, want)
	}
	t.Setenv(locations.EnvHome, "/srv/companion")
	c := lenderConfig([]string{"lend", "--foreground"})
	if c.Name != lenderServiceName || c.EnvVars[locations.EnvHome] != "/srv/companion" || c.Option["SystemdScript"] != lenderUnit {
		t.Errorf("the lender service's definition: %+v", c)
	}
}

// lend registers and starts the lender service, and shows the code its
// start made (its --foreground setup makes a fresh one); a registered one
// is replaced (this lend's choices win).
func TestKeepLendingRegistersTheLenderService(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := writeRecord(t, "AAAA-AAAA")
	f := &fakeService{installed: true, running: true}
	f.onStart = func() { writeRecord(t, "BBBB-BBBB") }
	withLenderManager(t, f, true)
	var said []string
	got, service, why := keepLending(context.Background(), lender.Options{}, r, func(s string) { said = append(said, s) })
	if !service || why != "" || got.Code.Code != "BBBB-BBBB" {
		t.Fatalf("keepLending: code %s, service %v, %q; want the service's new code", got.Code.Code, service, why)
	}
	if strings.Join(f.calls, " ") != "stop uninstall install start" || !f.running {
		t.Errorf("the service manager was asked to %v", f.calls)
	}
	if strings.Join(f.cfg.Arguments, " ") != "lend --foreground --user alice" {
		t.Errorf("the service runs %v", f.cfg.Arguments)
	}
	var out bytes.Buffer
	sayKeepLending(&out, false, service, why)
	if !strings.Contains(out.String(), "also after a restart (the service strata-lender)") {
		t.Errorf("lend said %q", out.String())
	}
}

// Where no service manager works, nothing is registered and lend says to
// keep --foreground running; a service that does not start is removed again.
func TestKeepLendingWithoutAServiceManager(t *testing.T) {
	t.Setenv(locations.EnvHome, t.TempDir())
	r := writeRecord(t, "AAAA-AAAA")
	f := &fakeService{}
	withLenderManager(t, f, false)
	got, service, why := keepLending(context.Background(), lender.Options{}, r, func(string) {})
	if service || got.Code.Code != "AAAA-AAAA" || len(f.calls) > 0 || !strings.Contains(why, "a container?") {
		t.Errorf("no manager: code %s service %v %q, calls %v", got.Code.Code, service, why, f.calls)
	}
	var out bytes.Buffer
	sayKeepLending(&out, false, service, why)
	if !strings.Contains(out.String(), "run `strata-service lend --foreground`") {
		t.Errorf("lend said %q", out.String())
	}

	f = &fakeService{startErr: errors.New("Failed to start strata-lender.service: Unit not found.")}
	withLenderManager(t, f, true)
	got, service, why = keepLending(context.Background(), lender.Options{}, r, func(string) {})
	if service || got.Code.Code != "AAAA-AAAA" || f.installed || !strings.Contains(why, "Unit not found") {
		t.Errorf("a failed start: code %s service %v %q, installed %v", got.Code.Code, service, why, f.installed)
	}
}

// A service that stops at once, or makes no code, is said so (with where
// its log is) instead of waiting for ever.
func TestWaitForNewCode(t *testing.T) {
	old := &lender.Record{Code: lend.State{Code: "AAAA-AAAA"}}
	load := func() (*lender.Record, error) { return old, nil }
	if _, err := waitForNewCode(context.Background(), "AAAA-AAAA", load, func() bool { return false }); err == nil ||
		!strings.Contains(err.Error(), "stopped right after its start") {
		t.Errorf("a stopped service: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := waitForNewCode(ctx, "AAAA-AAAA", load, func() bool { return true }); err == nil || !strings.Contains(err.Error(), "made no pairing code yet") {
		t.Errorf("no new code: %v", err)
	}
}

// lend stop removes the lender service first; none registered is fine.
func TestStopLenderService(t *testing.T) {
	f := &fakeService{installed: true, running: true}
	withLenderManager(t, f, true)
	stopLenderService(func(string) {})
	if strings.Join(f.calls, " ") != "stop uninstall" || f.installed {
		t.Errorf("lend stop asked the service manager to %v", f.calls)
	}
	f.calls = nil
	stopLenderService(func(string) {})
	if len(f.calls) > 0 {
		t.Errorf("with none registered, lend stop asked to %v", f.calls)
	}
}
