package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Service installs and starts strata-service by running it (so the wizard
// never needs the service's code, and the OS-service work stays in one
// program), and follows Strata's start through the control API.
type Service struct {
	// Exe is strata-service ("" = beside this program, else on PATH).
	Exe string
	// Client returns a control API client (default controlapi.NewClient).
	Client func() (*controlapi.Client, error)
	// StartTimeout bounds Follow (default 10 min: Strata's first start takes
	// 1-3 minutes, and the PC may stall while experts are locked into RAM).
	StartTimeout time.Duration
	// Poll is how long one events long-poll waits (default 5 s).
	Poll time.Duration

	// tookRoot, tookCfg: the install and config the service ran before
	// Install had it take the setup's ("" when it took none).
	tookRoot, tookCfg string

	// startSeq is the service's newest event when Start gave its order:
	// Follow reads from there, so a ready from before (a service that
	// Install started a moment ago) is not taken for the new start's.
	startSeq uint64
}

func (s *Service) exe() string {
	if s.Exe != "" {
		return s.Exe
	}
	return besideSelf("strata-service")
}

func (s *Service) client() (*controlapi.Client, error) {
	if s.Client != nil {
		return s.Client()
	}
	return controlapi.NewClient()
}

// run runs strata-service with args and returns its combined output.
func (s *Service) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.exe(), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		if ctx.Err() != nil {
			return text, ctx.Err()
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return text, fmt.Errorf("running %s: %w", s.exe(), err)
		}
		if text == "" {
			text = err.Error()
		}
		return text, fmt.Errorf("strata-service %s: %s", args[0], lastLine(text))
	}
	return text, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Status asks the control API first (the service runs); else the OS service
// manager through `strata-service status`. When neither can tell, it says
// Unknown, and a rollback will not remove a service it cannot tell it made.
func (s *Service) Status(ctx context.Context) (setupflow.ServiceStatus, error) {
	if c, err := s.client(); err == nil {
		st, err := c.State(ctx)
		if err == nil {
			return setupflow.ServiceStatus{Installed: true, Running: true, ServerPhase: st.Server.Phase, Seq: st.Seq,
				Describe: fmt.Sprintf("strata-service %s runs; %s", st.Service.Version, serverWords(st.Server.Phase))}, nil
		}
	}
	// `strata-service status --json` asks the OS service manager.
	cmd := exec.CommandContext(ctx, s.exe(), "status", "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run() // a stopped or missing service exits non-zero; the JSON says which
	var st struct {
		Service *struct {
			Installed bool   `json:"installed"`
			Running   bool   `json:"running"`
			Manager   string `json:"manager"`
		} `json:"service"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Service == nil {
		why := lastLine(errb.String() + "\n" + out.String())
		if why == "" && runErr != nil {
			why = runErr.Error()
		}
		return setupflow.ServiceStatus{Installed: true, Unknown: true, Describe: "the service's state could not be read (" + why + ")"}, nil
	}
	switch {
	case !st.Service.Installed:
		return setupflow.ServiceStatus{Describe: "strata-service is not installed as a service"}, nil
	case st.Service.Running:
		// Installed and running but no control API answer: it is starting.
		return setupflow.ServiceStatus{Installed: true, Running: true, Describe: "strata-service is installed and running (" + st.Service.Manager + ")"}, nil
	}
	return setupflow.ServiceStatus{Installed: true, Describe: "strata-service is installed but stopped (" + st.Service.Manager + ")"}, nil
}

// Install runs `strata-service install`; an already installed service is
// fine (it reads the Strata root and config from the settings the wizard
// writes, so a restart is the update). Then it makes sure the service runs
// and answers: the config and the settings are changed only by asking it.
func (s *Service) Install(ctx context.Context, root, cfg string) error {
	out, err := s.run(ctx, "install", "--strata-root", root, "--config", cfg)
	if err != nil && strings.Contains(strings.ToLower(out), "already installed") {
		err = nil
	}
	if err != nil && (strings.Contains(strings.ToLower(out), "administrator") || strings.Contains(strings.ToLower(out), "root")) {
		return fmt.Errorf("%w. Installing a service needs administrator rights: run setup as administrator (or with sudo)", err)
	}
	if err != nil {
		return err
	}
	if err := s.ensureRunning(ctx); err != nil {
		return err
	}
	return s.takeConfig(ctx, root, cfg)
}

// TookFrom is the install and config the service ran before Install had it
// take the setup's ("" when it ran none, or the same).
func (s *Service) TookFrom() (root, cfg string) { return s.tookRoot, s.tookCfg }

// Take has the running service run root with cfg again (the rollback of
// Install's switch); Strata is started by the rollback's restart.
func (s *Service) Take(ctx context.Context, root, cfg string) error {
	err := s.takeConfig(ctx, root, cfg)
	s.tookRoot, s.tookCfg = "", ""
	return err
}

// takeConfig has the running service run root with cfg (a service with no
// install, or running another config, takes the one the setup chose: the
// same path a model switch takes), so the change Apply makes next and the
// Done page concern the file Review showed.
func (s *Service) takeConfig(ctx context.Context, root, cfg string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	st, err := c.State(ctx)
	if err != nil {
		return err
	}
	if pathcmp.Same(st.Config.Path, cfg) && pathcmp.Same(st.Config.StrataRoot, root) {
		return nil
	}
	s.tookRoot, s.tookCfg = st.Config.StrataRoot, st.Config.Path
	_, err = c.SwitchConfig(ctx, controlapi.ConfigRequest{StrataRoot: root, Config: cfg, IfRunning: st.Config.Path, Confirm: true, NoCarry: true, NoStart: true})
	if err != nil {
		return fmt.Errorf("the service could not take %s: %w", cfg, controlapi.Words(err))
	}
	return nil
}

// ensureRunning starts the OS service when its control API does not
// answer, and waits (up to a minute) until it does.
func (s *Service) ensureRunning(ctx context.Context) error {
	answers := func() bool {
		c, err := s.client()
		if err != nil {
			return false
		}
		_, err = c.State(ctx)
		return err == nil
	}
	if answers() {
		return nil
	}
	if _, err := s.run(ctx, "start"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for !answers() {
		if time.Now().After(deadline) {
			return errors.New("the Strata Companion service was started but its control API did not answer within a minute: look at `strata-service status` and the service log")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func (s *Service) Uninstall(ctx context.Context) error {
	_, err := s.run(ctx, "uninstall")
	return err
}

// Start restarts the server through the control API when the service runs,
// else starts the OS service.
func (s *Service) Start(ctx context.Context, restart bool) error {
	if c, err := s.client(); err == nil {
		action := "start"
		// A service started a moment ago (by Install) already started
		// Strata with the old config: that is a restart too.
		st, err := c.State(ctx)
		if restart || err == nil && st.Server.Phase != controlapi.PhaseStopped && st.Server.Phase != controlapi.PhaseFailed {
			action = "restart"
		}
		if err == nil {
			s.startSeq = st.Seq
		}
		if err := c.Server(ctx, action); err == nil {
			return nil
		} else if !errors.Is(err, controlapi.ErrNotRunning) {
			return err
		}
	}
	_, err := s.run(ctx, "start")
	return err
}

// Follow reads events after since until the server is ready or failed,
// passing on the phase and new lines of its log.
func (s *Service) Follow(ctx context.Context, since uint64, progress func(setupflow.Progress)) error {
	timeout := s.StartTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	poll := s.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	since, s.startSeq = max(since, s.startSeq), 0
	var c *controlapi.Client
	for c == nil {
		var err error
		if c, err = s.client(); err != nil {
			progress(setupflow.Progress{Fraction: -1, Phase: "starting", Text: "Waiting for the service to answer"})
			select {
			case <-ctx.Done():
				return s.timeoutErr(ctx, "the service did not answer")
			case <-time.After(time.Second):
			}
		}
	}
	var tail []string
	frac := 0.05
	for {
		r, err := c.Events(ctx, since, poll)
		if err != nil {
			if ctx.Err() != nil {
				return s.timeoutErr(ctx, "Strata did not become ready")
			}
			// The service may be restarting itself: wait and ask again.
			select {
			case <-ctx.Done():
				return s.timeoutErr(ctx, "Strata did not become ready")
			case <-time.After(time.Second):
			}
			continue
		}
		since = r.Next
		if lr, err := c.Logs(ctx, 40); err == nil {
			for _, l := range newLines(tail, lr.Lines) {
				progress(setupflow.Progress{Fraction: -1, LogLine: l})
			}
			tail = lr.Lines
		}
		for _, e := range r.Events {
			switch e.Kind {
			case events.ServerStarting, events.ServerProgress, events.ExpertCache, events.EncoderStarting, events.ServerRestarting:
				frac = min(frac+0.15, 0.9)
				progress(setupflow.Progress{Fraction: frac, Phase: "starting", Text: eventText(e)})
			case events.ServerReady:
				progress(setupflow.Progress{Fraction: 1, Phase: "ready", Text: eventText(e)})
				return nil
			case events.ServerFailed:
				progress(setupflow.Progress{Fraction: -1, Phase: "failed", Text: e.Message})
				return fmt.Errorf("%s. The last lines of its log are shown above; fix what they name and run setup again", strings.TrimSuffix(e.Message, "."))
			case events.EncoderFailed:
				progress(setupflow.Progress{Fraction: -1, Phase: "starting", Text: "The image encoder did not start: " + e.Message})
			}
		}
	}
}

func (s *Service) timeoutErr(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s within %s. Strata may still be loading (a first start can take minutes): look at the log (strata-service status shows where) and try again", what, s.StartTimeout)
	}
	return ctx.Err()
}

func eventText(e events.Event) string {
	if e.Message != "" {
		return e.Message
	}
	return strings.ReplaceAll(string(e.Kind), ".", " ")
}

// newLines returns the lines of cur after the end of prev (a sliding tail).
func newLines(prev, cur []string) []string {
	if len(prev) == 0 {
		return cur
	}
	// The longest suffix of prev that is a prefix of cur marks the overlap.
	for k := min(len(prev), len(cur)); k > 0; k-- {
		if equal(prev[len(prev)-k:], cur[:k]) {
			return cur[k:]
		}
	}
	return cur
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// serverWords is the server's phase as a sentence ("Strata has failed",
// never "Strata is failed").
func serverWords(phase string) string {
	switch phase {
	case controlapi.PhaseFailed:
		return "Strata has failed"
	case controlapi.PhaseStopped:
		return "Strata is stopped"
	case controlapi.PhaseStarting, controlapi.PhaseRestarting, controlapi.PhaseReady:
		return "Strata is " + phase
	case "":
		return "Strata's state is not known"
	}
	return "Strata: " + phase
}
