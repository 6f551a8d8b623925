package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/lender"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Lending is this PC lending its GPU from the setup window: strata-service
// lend, run with an administrator's rights as a program of its own
// (lending_windows.go: ShellExecute's "runas", so Windows asks; elsewhere
// pkexec), which goes on lending after the window closes. Start runs
// `lend --foreground` (its setup, then its pairing service, until Stop);
// New code and Stop run `lend code` and `lend stop` and wait for them. The
// window reads what the lender shows this account (lender.ReadShown) and
// the lender's output, which each run writes to a file of this account's
// (Dir) ending with a line of its own when the program ends.
type Lending struct {
	// Exe is strata-service (default: beside this program, else PATH).
	Exe string
	// Dir keeps each run's output (default: this account's cache folder,
	// strata-companion).
	Dir string
	// User is the lending account (default: the one running this window;
	// the elevated program may run as an administrator's account).
	User string
	// Shown reads the lender's view for this account (default
	// lender.ReadShown).
	Shown func() (*lender.Shown, error)
	// Elevate starts argv with an administrator's rights, its output and
	// then the end line (endLine) going to the file out; it returns once
	// the program runs, or the permission was refused (default: elevate).
	Elevate func(ctx context.Context, argv []string, out string) error
	// Boot is when this PC started (zero: unknown; default: bootTime).
	Boot func() time.Time
	// Poll is how often a run waited for is looked at (default 250 ms).
	Poll time.Duration
}

// endMarker starts the line each run's output ends with: "<marker> <exit
// code>".
const endMarker = "strata-companion-run-ended"

func endLine(code int) string { return fmt.Sprintf("%s %d\n", endMarker, code) }

// The runs' output files in Dir.
const (
	lendOut     = "lend.log"
	lendCodeOut = "lend-code.log"
	lendStopOut = "lend-stop.log"
)

// waitLimit bounds a run waited for (lend code, lend stop).
const waitLimit = 3 * time.Minute

func (l *Lending) dir() (string, error) {
	if l.Dir != "" {
		return l.Dir, os.MkdirAll(l.Dir, 0o700)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(c, "strata-companion")
	return d, os.MkdirAll(d, 0o700)
}

func (l *Lending) argv(args ...string) ([]string, error) {
	exe := l.Exe
	if exe == "" {
		exe = besideSelf("strata-service")
	}
	if !filepath.IsAbs(exe) {
		p, err := exec.LookPath(exe)
		if err != nil {
			return nil, fmt.Errorf("strata-service is not beside this program: reinstall Strata Companion (%v)", err)
		}
		exe = p
	}
	user := l.User
	if user == "" {
		a, err := account.Current()
		if err != nil {
			return nil, err
		}
		user = a.Name
	}
	return append(append([]string{exe}, args...), "--user", user), nil
}

// launch starts one run of strata-service lend ARGS with its output in
// Dir/out (the last run's output replaced).
func (l *Lending) launch(ctx context.Context, out string, args ...string) (string, error) {
	argv, err := l.argv(args...)
	if err != nil {
		return "", err
	}
	d, err := l.dir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(d, out)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	el := l.Elevate
	if el == nil {
		el = elevate
	}
	return path, el(ctx, argv, path)
}

// Start runs the lender's setup, then its pairing service, until Stop.
func (l *Lending) Start(ctx context.Context) error {
	_, err := l.launch(ctx, lendOut, "lend", "--foreground")
	return err
}

// NewCode has the lender show a new code, and waits for it.
func (l *Lending) NewCode(ctx context.Context) error {
	return l.runAndWait(ctx, lendCodeOut, "lend", "code")
}

// Stop ends lending (the lender started by Start ends with it) and waits.
func (l *Lending) Stop(ctx context.Context) error {
	return l.runAndWait(ctx, lendStopOut, "lend", "stop")
}

func (l *Lending) runAndWait(ctx context.Context, out string, args ...string) error {
	path, err := l.launch(ctx, out, args...)
	if err != nil {
		return err
	}
	poll := l.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if r := readRun(path); r.ended {
			if r.code != 0 {
				return errors.New(r.failure())
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("strata-service %s did not finish within %s (%v)", strings.Join(args, " "), waitLimit, ctx.Err())
		case <-t.C:
		}
	}
}

// Status is what the lender shows this account, and how its pairing
// service stands: the one Start ran, from its output.
func (l *Lending) Status() setupflow.LendStatus {
	var st setupflow.LendStatus
	read := l.Shown
	if read == nil {
		read = lender.ReadShown
	}
	if s, err := read(); err == nil {
		st.Lending, st.Name, st.Code, st.Expires, st.Paired = true, s.Name, s.Code, s.Expires, s.Paired
	}
	d, err := l.dir()
	if err != nil {
		return st
	}
	path := filepath.Join(d, lendOut)
	fi, err := os.Stat(path)
	if err != nil {
		return st // never started from here: unknown
	}
	boot := time.Time{}
	if l.Boot != nil {
		boot = l.Boot()
	} else {
		boot = bootTime()
	}
	if !boot.IsZero() && fi.ModTime().Before(boot) {
		st.Lender = setupflow.LenderEnded // it ran before this PC restarted
		return st
	}
	r := readRun(path)
	st.Step = r.step
	switch {
	case !r.ended:
		st.Lender = setupflow.LenderRunning
	default:
		st.Lender = setupflow.LenderEnded
		if r.code != 0 {
			st.Err = r.failure()
		}
	}
	return st
}

// run is one run's output as read back.
type run struct {
	ended bool
	code  int
	step  string   // the last "... step" line, without the dots
	errs  []string // its error lines, in words
}

// errPrefix is how strata-service starts the line of its error.
var errPrefix = regexp.MustCompile(`^strata-service lend( [a-z]+)?: `)

func readRun(path string) run {
	b, err := os.ReadFile(path)
	if err != nil {
		return run{}
	}
	var r run
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, endMarker+" "):
			r.ended = true
			r.code, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, endMarker)))
		case strings.HasPrefix(line, "... "):
			r.step = strings.TrimPrefix(line, "... ")
		case errPrefix.MatchString(line):
			r.errs = append(r.errs, upperFirst(errPrefix.ReplaceAllString(line, "")))
		}
	}
	return r
}

// failure says why a run that ended with a nonzero code failed.
func (r run) failure() string {
	if w := exitWords(r.code); w != "" {
		return w
	}
	if len(r.errs) > 0 {
		return strings.Join(r.errs, " ")
	}
	return fmt.Sprintf("the lender ended with exit code %d", r.code)
}

// cmdLine is argv as one cmd.exe command line whose output goes to out,
// then the end line (lending_windows.go runs it; it is here so its tests
// run on every system). cmd.exe keeps the exit code as 0 or 1.
func cmdLine(argv []string, out string) string {
	q := func(s string) string { return `"` + s + `"` }
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q(a))
	}
	fmt.Fprintf(&b, " >%s 2>&1 && echo %s 0 >>%s || echo %s 1 >>%s", q(out), endMarker, q(out), endMarker, q(out))
	// /c strips the first and the last quote of what follows it.
	return `/d /c "` + b.String() + `"`
}
