package cli

// The lender service "strata-lender": `strata-service lend` registers it
// with the OS's service manager (kardianos/service, as install does for the
// main service) so that this PC keeps lending after the terminal closes and
// after a restart; it runs `strata-service lend --foreground --user NAME`.
// `lend stop` stops and removes it before undoing the rest. Where no service
// manager can keep it (a container), lend says to run --foreground instead.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	kservice "github.com/kardianos/service"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/lender"
	"github.com/strata-companion/companion/internal/locations"
)

const (
	lenderServiceName        = "strata-lender"
	lenderServiceDisplayName = "Strata Companion lender"
	lenderServiceDescription = "Lends this PC's GPU to the PC that runs Strata: answers pairings by code and announces this PC on the home network."
)

// lenderUnit is the lender's systemd unit (kardianos' template syntax): it
// restarts only after a failure (SIGTERM is a stop), after the network.
const lenderUnit = `[Unit]
Description={{Description}}
ConditionFileIsExecutable={{Path | cmdEscape}}
After=network-online.target
Wants=network-online.target
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=simple
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
{{if WorkingDirectory}}WorkingDirectory={{WorkingDirectory | cmdEscape}}
{{end}}{{range EnvVars}}{{.}}
{{end}}Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// lenderArgs is the lender service's command line: lend --foreground for
// the record's account, with the choices lend was given that differ from
// the defaults (a --foreground start runs the setup again with them).
func lenderArgs(o lender.Options, r *lender.Record) []string {
	args := []string{"lend", "--foreground", "--user", r.User}
	if o.Name != "" {
		args = append(args, "--name", r.Name)
	}
	if r.SSHPort != 0 && r.SSHPort != 22 {
		args = append(args, "--ssh-port", strconv.Itoa(r.SSHPort))
	}
	if r.PairPort != 0 && r.PairPort != lend.DefaultPairPort {
		args = append(args, "--pair-port", strconv.Itoa(r.PairPort))
	}
	if o.AgentBinary != "" {
		args = append(args, "--agent-binary", o.AgentBinary)
	}
	if o.Valid > 0 && o.Valid != lend.DefaultValid {
		args = append(args, "--code-valid", o.Valid.String())
	}
	return args
}

// lenderConfig is the lender service's definition (args nil: only the name
// matters, for stop and uninstall).
func lenderConfig(args []string) *kservice.Config {
	c := &kservice.Config{
		Name:             lenderServiceName,
		DisplayName:      lenderServiceDisplayName,
		Description:      lenderServiceDescription,
		Arguments:        args,
		WorkingDirectory: serviceWorkDir(),
		Option: kservice.KeyValue{
			"SystemdScript":          lenderUnit,
			"RunAtLoad":              true,
			"KeepAlive":              true,
			"StartType":              "automatic",
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "10s",
		},
	}
	if h, ok := os.LookupEnv(locations.EnvHome); ok && h != "" {
		// The lending record is where this lend kept it.
		c.EnvVars = map[string]string{locations.EnvHome: h}
	}
	return c
}

// lenderServices makes the lender service's handle, and lenderManager says
// whether this system's service manager can run it (tests replace both).
var (
	lenderServices = func(c *kservice.Config) (kservice.Service, error) {
		return kservice.New(noProgram{}, c)
	}
	lenderManager = serviceManagerWorks
)

// noProgram: the lender service is driven from outside here (install,
// start, stop); what it runs is `lend --foreground`.
type noProgram struct{}

func (noProgram) Start(kservice.Service) error { return nil }
func (noProgram) Stop(kservice.Service) error  { return nil }

// keepLending makes the lender service keep this PC lending: installed
// (again, with this lend's choices) and started. Once it runs, the code is
// the one its own start made (a --foreground start makes a fresh one), so
// the code to show is read back from the record. ok is false, with why,
// where no service manager can run it; nothing is left installed then.
func keepLending(ctx context.Context, o lender.Options, r *lender.Record, progress func(string)) (rec *lender.Record, ok bool, why string) {
	if works, why := lenderManager(); !works {
		return r, false, why
	}
	s, err := lenderServices(lenderConfig(lenderArgs(o, r)))
	if err != nil {
		return r, false, err.Error()
	}
	if removeLenderService(s, progress) {
		progress("registering the lender service again with this lend's choices")
	}
	if err := s.Install(); err != nil {
		return r, false, "registering the lender service: " + err.Error()
	}
	progress("starting the lender service " + lenderServiceName + " (" + s.Platform() + ")")
	if err := s.Start(); err != nil {
		s.Uninstall()
		return r, false, "starting the lender service: " + err.Error()
	}
	// Its --foreground start runs the setup again, with a new code.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	got, err := waitForNewCode(wctx, r.Code.Code, lender.Load, func() bool {
		st, err := s.Status()
		return err != nil || st != kservice.StatusStopped
	})
	if err != nil {
		return r, true, err.Error()
	}
	return got, true, ""
}

// waitForNewCode waits until the record holds another code than old (the
// service's start made it); load reads the record, running says whether
// the service still runs. The error says what happened instead.
func waitForNewCode(ctx context.Context, old lend.Code, load func() (*lender.Record, error), running func() bool) (*lender.Record, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if r, err := load(); err == nil && r.Code.Code != old {
			return r, nil
		}
		if !running() {
			return nil, errors.New("the lender service stopped right after its start: " + lenderLogWords)
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("the lender service runs but made no pairing code yet: " + lenderLogWords)
		case <-tick.C:
		}
	}
}

// removeLenderService stops and unregisters the lender service when it is
// registered; it reports whether it was.
func removeLenderService(s kservice.Service, progress func(string)) bool {
	ok, st := installed(s)
	if !ok {
		return false
	}
	if st == kservice.StatusRunning {
		progress("stopping the lender service " + lenderServiceName)
		if err := s.Stop(); err != nil {
			progress("stopping the lender service: " + err.Error())
		}
	}
	if err := s.Uninstall(); err != nil {
		progress("removing the lender service: " + err.Error())
		return true
	}
	progress("removed the lender service " + lenderServiceName)
	return true
}

// stopLenderService is lend stop's first step: the service that lends is
// stopped and removed, so it announces and pairs no more.
func stopLenderService(progress func(string)) {
	s, err := lenderServices(lenderConfig(nil))
	if err != nil {
		return // no service manager: nothing was registered
	}
	removeLenderService(s, progress)
}

// sayKeepLending is lend's last words: the code, and how this PC keeps
// lending.
func sayKeepLending(w io.Writer, asJSON, service bool, why string) {
	if asJSON {
		return
	}
	switch {
	case service && why == "":
		fmt.Fprintf(w, "This PC keeps lending its GPU, also after a restart (the service %s). `strata-service lend stop` undoes everything.\n", lenderServiceName)
	case service:
		fmt.Fprintf(w, "The lender service %s is registered, but %s. `strata-service lend stop` undoes everything.\n", lenderServiceName, why)
	default:
		fmt.Fprintf(w, "No service manager can keep lending here (%s).\n", why)
		fmt.Fprintln(w, "Now keep lending: run `strata-service lend --foreground` so the other PC can pair; `lend stop` undoes everything.")
	}
}

// lenderServiceWords is lend status's line about the lender service.
func lenderServiceWords() string {
	s, err := lenderServices(lenderConfig(nil))
	if err != nil {
		return "Lender service: none (" + err.Error() + "): `strata-service lend --foreground` must run for other PCs to pair."
	}
	ok, st := installed(s)
	if !ok {
		return "Lender service: not registered: `strata-service lend --foreground` must run for other PCs to pair (`strata-service lend` registers it)."
	}
	return fmt.Sprintf("Lender service: %s %s (%s).", lenderServiceName, statusWord(st), s.Platform())
}
