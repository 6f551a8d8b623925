package daemon

// Updating Strata under the service (POST /v1/strata/update, the CLI's
// update-strata and the tray's item). Strata's own update (UPDATE.bat,
// update.sh) assumes it owns the server: run beside the service's server,
// `setup.py --update` keeps the running engine ("engine X is in use"),
// still says "Strata is updated" and exits 0. So the service does it:
// stop the server (the service stays), `git pull --ff-only` (with the move
// to the rewritten history UPDATE.bat makes when that fails, never its
// pauses), `<venv python> setup.py --update`, start Strata and wait until it
// is ready, and say which engine ran before and after. A failure ("[X]",
// exit 1, an engine kept "in use", not ready after) puts the old engine
// back (`setup.py --rollback-engine`, when this update replaced it) and
// starts it again. The service never checks for updates by itself: only
// when asked.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// ReleasesURL is where an install that is not a git checkout learns
// Strata's newest release (a variable for tests).
var ReleasesURL = "https://api.github.com/repos/Niko1221/Strata/releases/latest"

var (
	// consoleHint is Strata's "Start the model with START-HERE.bat ..."
	// sentence (and its kin naming a .bat to start a server).
	consoleHint  = regexp.MustCompile(`\s*(Start the model with|Start Strata with|Run) [^.]*\.bat[^.]*\.?`)
	cmakeVersion = regexp.MustCompile(`project\s*\(\s*strata\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)`)
	minEngine    = regexp.MustCompile(`MIN_ENGINE\s*=\s*\((\d+),\s*(\d+),\s*(\d+)\)`)
)

// older compares dotted versions numerically ("" is oldest).
func older(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func minEngineOf(setupPy string) string {
	if m := minEngine.FindStringSubmatch(setupPy); m != nil {
		return m[1] + "." + m[2] + "." + m[3]
	}
	return ""
}

// git runs git in root as a (nil: the service's own account), through
// asowner: as the checkout's owner, git needs no safe.directory, and
// nothing the owner set (hooks, core.fsmonitor) runs as root.
func git(ctx context.Context, a *account.Account, root string, args ...string) (string, error) {
	cmd := asowner.Command(ctx, a, root, []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}, "git", append([]string{"-C", root}, args...)...)
	defer asowner.Release(cmd)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// installAccount is the account whose rights the service uses inside
// root (update, setup, rollback): its owner (asowner.For), nil for an
// install root's alone. A root-owned install another account could still
// change is refused: the service would run that account's code as root.
func installAccount(root, python string) (*account.Account, error) {
	a, err := asowner.For(root)
	if err != nil || a != nil {
		return a, err
	}
	if account.Privileged() {
		if _, err := account.ServerAccount(root, python); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// check says whether an update exists: the install's git origin, else
// Strata's releases; offline says so.
func (d *Daemon) check(ctx context.Context, a *account.Account, root, from string) *controlapi.UpdateResponse {
	r := &controlapi.UpdateResponse{From: from}
	// An engine an earlier update kept (it was in use) is due anyway.
	local, _ := asowner.ReadFile(filepath.Join(root, "setup.py"), asowner.SmallLimit, a)
	due := minEngineOf(string(local))
	engineDue := due != "" && older(ReadBuild(root).Version, due)
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if out, err := git(cctx, a, root, "fetch", "--quiet", "origin"); err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				r.Offline = true // nothing was checked (the CLI exits 1)
				r.Message = noGit
				return r
			}
			r.Offline = true
			r.Message = "Could not reach the install's git origin (" + lastLine(out, err) + "): offline? Nothing was checked."
			return r
		}
		up := "@{u}"
		if _, err := git(cctx, a, root, "rev-parse", "--verify", "--quiet", up); err != nil {
			up = "origin/main"
		}
		n, _ := git(cctx, a, root, "rev-list", "--count", "HEAD.."+up)
		behind, _ := strconv.Atoi(n)
		if cm, err := git(cctx, a, root, "show", up+":CMakeLists.txt"); err == nil {
			if m := cmakeVersion.FindStringSubmatch(cm); m != nil {
				r.To = m[1]
			}
		}
		if r.To == "" {
			if sp, err := git(cctx, a, root, "show", up+":setup.py"); err == nil {
				r.To = minEngineOf(sp)
			}
		}
		r.Available = behind > 0 || engineDue
		switch {
		case behind > 0:
			r.Message = fmt.Sprintf("An update of Strata is available: %d new commit(s) on its git origin", behind)
			if r.To != "" {
				r.Message += " (version " + r.To + ")"
			}
			r.Message += "."
		case engineDue:
			r.To = due
			r.Message = fmt.Sprintf("Strata's files are up to date, but its engine %s is older than the %s they need (%s).", ReadBuild(root).Version, due, d.engineKeptReason())
		default:
			r.Message = "Strata is up to date."
		}
		return r
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, ReleasesURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.Offline = true
		r.Message = "Could not reach Strata's releases (" + err.Error() + "): offline? Nothing was checked."
		return r
	}
	defer resp.Body.Close()
	var rel struct {
		Tag string `json:"tag_name"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&rel) != nil {
		r.Offline = true
		r.Message = fmt.Sprintf("Strata's releases did not answer as expected (%s): nothing was checked.", resp.Status)
		return r
	}
	r.To = strings.TrimPrefix(rel.Tag, "v")
	r.Available = older(from, r.To) || engineDue
	if engineDue && !older(from, r.To) {
		r.To = due
		r.Message = fmt.Sprintf("Strata's engine %s is older than the %s its files need (%s).", ReadBuild(root).Version, due, d.engineKeptReason())
		return r
	}
	if r.Available {
		r.Message = "Strata " + r.To + " is available. This copy of Strata is not a git checkout: the update runs Strata's own setup, which downloads the new engine, but cannot bring new files (download the new release for those)."
	} else {
		r.Message = "Strata is up to date."
	}
	return r
}

func lastLine(out string, err error) string {
	if out == "" {
		return err.Error()
	}
	l := strings.Split(out, "\n")
	return l[len(l)-1]
}

// UpdateStrata is POST /v1/strata/update.
func (d *Daemon) UpdateStrata(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error) {
	what := "an update of Strata"
	if req.Check {
		what = "a check for an update of Strata"
	}
	done, err := d.beginOp(what)
	if err != nil {
		return nil, err
	}
	defer done()
	cur := d.current()
	if cur.in == nil {
		return nil, conflict("no Strata install to update: %v", cur.resolveErr)
	}
	root := cur.in.Root
	from := d.tracker.Snapshot().Server.Version
	if from == "" {
		from = ReadBuild(root).Version
	}
	acct, err := installAccount(root, cur.in.Python)
	if err != nil {
		return nil, conflict("not updating Strata: %v", err)
	}
	r := d.check(ctx, acct, root, from)
	if req.Check || !r.Available {
		if r.Available {
			r.Busy = d.busy(ctx) // the caller names a request in flight before asking
		}
		return r, nil
	}
	if !req.Confirm && d.busy(ctx) {
		return nil, controlapi.Busy(errors.New("Strata is answering a request now: updating stops it. Ask again with confirm to go ahead, or wait until it is done; nothing was changed"))
	}
	d.mu.Lock()
	runCtx := d.runCtx
	d.mu.Unlock()
	if runCtx == nil || runCtx.Err() != nil {
		return nil, conflict("the service is starting or stopping: try again")
	}
	say := func(line string) {
		// Strata's console hint to start it from its own window would,
		// under the service, start a second server: left out.
		line = consoleHint.ReplaceAllString(line, "")
		if strings.TrimSpace(line) == "" {
			return
		}
		r.Lines = append(r.Lines, line)
		d.publish(events.New(line, events.UpdateProgressDetails{}))
	}
	d.publish(events.New("updating Strata (engine "+from+"): the server stops meanwhile", events.UpdateStartedDetails{From: from}))
	say("stopping the Strata server (the service keeps running)")
	d.stop(cur)
	before := ReadBuild(root).Version

	var failed string
	gitCopy, pulled := false, false
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		gitCopy = true
		head, _ := git(runCtx, acct, root, "rev-parse", "HEAD")
		failed = d.pull(runCtx, acct, root, say)
		now, _ := git(runCtx, acct, root, "rev-parse", "HEAD")
		pulled = head != now
	} else {
		say("this copy of Strata is not a git checkout: no files are pulled; only its setup's update runs")
	}
	inUse := false
	warn := "" // Strata's own "[!]" line about the engine, quoted as it said it
	if failed == "" {
		code, lines, err := d.runSetup(runCtx, acct, cur.in, say, "--update")
		for _, l := range lines {
			t := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(t, "[X]") && failed == "":
				failed = "Strata's setup stopped: " + t
			case strings.Contains(l, "is in use"):
				inUse = true
				warn = t
			case strings.HasPrefix(t, "[!]") && strings.Contains(strings.ToLower(t), "engine"):
				warn = t
			}
		}
		switch {
		case err != nil:
			failed = "running Strata's setup: " + err.Error()
		case failed == "" && code != 0:
			failed = fmt.Sprintf("Strata's setup exited with code %d", code)
		case failed == "" && inUse:
			failed = "Strata's setup kept engine " + before + " because it is in use (another Strata, or an engine left running, holds it): close it and update again"
		}
	}
	after := ReadBuild(root).Version
	// The engine these files need, against the one installed now: a setup
	// that refused the download still says "Strata is updated" and exits 0.
	sp, _ := asowner.ReadFile(filepath.Join(root, "setup.py"), asowner.SmallLimit, acct) // as check reads it
	need := minEngineOf(string(sp))
	if failed == "" && need != "" && older(after, need) {
		failed = fmt.Sprintf("Strata's engine was not updated: it stays %s, and these files need %s", after, need)
		if warn != "" {
			failed += "; Strata's setup said \"" + warn + "\""
		}
	}
	d.mu.Lock()
	d.engineKept = ""
	if need != "" && older(after, need) {
		d.engineKept = warn
		if d.engineKept == "" {
			d.engineKept = "-"
		}
	}
	d.mu.Unlock()
	replaced := after != before
	rollback := func() {
		if !replaced || r.RolledBack {
			return
		}
		say("putting the old engine back (setup.py --rollback-engine)")
		if code, _, err := d.runSetup(runCtx, acct, cur.in, say, "--rollback-engine"); err != nil || code != 0 {
			say(fmt.Sprintf("the rollback did not work (exit %d, %v): the engine left is %s", code, err, ReadBuild(root).Version))
			return
		}
		r.RolledBack = true
	}
	if failed != "" {
		rollback()
	}
	ver, ready, why := d.startAndWait(runCtx, root, say)
	if failed == "" && !ready {
		failed = "Strata did not get ready after the update: " + why
		// The new engine that did not come up is stopped before the old
		// one is put back (a running engine is not replaced).
		say("stopping the new engine, which did not get ready")
		d.stop(d.current())
		rollback()
		if r.RolledBack {
			ver, ready, why = d.startAndWait(runCtx, root, say)
		}
	}
	r.To = ver
	files := "Strata's files were not pulled (this copy is not a git checkout: download the new release to get them)"
	switch {
	case gitCopy && pulled:
		files = "Strata's files were pulled"
	case gitCopy:
		files = "no new files were pulled"
	}
	if failed != "" {
		r.Message = "The update failed: " + failed + ". " + files + "."
		if r.RolledBack {
			r.Message += " The old engine was put back."
		}
		if ready {
			r.Message += fmt.Sprintf(" Strata runs engine %s again.", ver)
		} else {
			r.Message += " Strata did not start again either: " + why
		}
		d.publish(events.New(r.Message, events.UpdateFailedDetails{From: from, To: ver, RolledBack: r.RolledBack}))
		return r, nil
	}
	r.Updated = true
	switch {
	case from != ver:
		r.Message = fmt.Sprintf("Strata was updated: engine %s -> %s; %s. It is ready.", from, ver, files)
	case pulled:
		r.Message = fmt.Sprintf("Strata's files were pulled; its engine stays %s (these files need no newer one). It is ready.", ver)
	default:
		r.Updated = false
		r.Message = fmt.Sprintf("Nothing was updated: %s, and the engine stays %s. Strata runs again and is ready.", files, ver)
	}
	ok := true
	d.publish(events.New(r.Message, events.UpdateFinishedDetails{From: from, To: ver, OK: &ok}))
	return r, nil
}

// noGit is what an update says when git cannot be run.
const noGit = "git is not installed for the account that updates Strata (the service's): install Git for it, or update Strata by hand with its UPDATE.bat; nothing was changed"

// engineKeptReason is why the engine is older than the files need, as the
// last update learned it.
func (d *Daemon) engineKeptReason() string {
	d.mu.Lock()
	why := d.engineKept
	d.mu.Unlock()
	switch why {
	case "":
		return "the update that brought these files did not install it"
	case "-":
		return "the last update did not install it"
	}
	return "the last update did not install it; Strata's setup said \"" + why + "\""
}

// pull is UPDATE.bat's git step: `git pull --ff-only`, and when that fails
// the move to Strata's rewritten history (#1276): keep HEAD on a
// pre-cleanup-backup[-N] branch and check out origin/main. "" = done.
func (d *Daemon) pull(ctx context.Context, a *account.Account, root string, say func(string)) string {
	say("git pull --ff-only")
	out, err := git(ctx, a, root, "pull", "--ff-only")
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			say(l)
		}
	}
	if err == nil {
		return ""
	}
	if errors.Is(err, exec.ErrNotFound) {
		return noGit
	}
	// One backup branch per state of this checkout: a retry reuses the
	// branch an earlier try made of the same commit.
	if have, err := git(ctx, a, root, "for-each-ref", "--points-at", "HEAD", "--format=%(refname:short)", "refs/heads/pre-cleanup-backup*"); err == nil && have != "" {
		name := strings.Split(have, "\n")[0]
		say("the pull could not fast-forward: this checkout is kept already on the branch " + name + "; moving to origin/main (as UPDATE.bat does)")
		if out, err := git(ctx, a, root, "checkout", "-B", "main", "origin/main"); err != nil {
			return "git checkout -B main origin/main: " + lastLine(out, err)
		}
		return ""
	}
	name := "pre-cleanup-backup"
	for n := 2; ; n++ {
		if _, err := git(ctx, a, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+name); err != nil {
			break
		}
		name = fmt.Sprintf("pre-cleanup-backup-%d", n)
	}
	say("the pull could not fast-forward: keeping this checkout on the branch " + name + " and moving to origin/main (as UPDATE.bat does)")
	if out, err := git(ctx, a, root, "branch", name, "HEAD"); err != nil {
		return "git branch " + name + ": " + lastLine(out, err)
	}
	if out, err := git(ctx, a, root, "checkout", "-B", "main", "origin/main"); err != nil {
		return "git checkout -B main origin/main: " + lastLine(out, err)
	}
	return ""
}

// runSetup runs `<venv python> setup.py args` in the install as a (the
// install's owner, through asowner; nil: the service's own account),
// unattended (no terminal: it asks nothing), each line said as it comes.
func (d *Daemon) runSetup(ctx context.Context, a *account.Account, in *stratainstall.Install, say func(string), args ...string) (int, []string, error) {
	py := in.Python
	if py == "" {
		return -1, nil, errors.New("the install has no Python venv (.venv): run Strata's setup in " + in.Root)
	}
	say(filepath.Base(py) + " setup.py " + strings.Join(args, " "))
	cmd := asowner.Command(ctx, a, in.Root, []string{"PYTHONUNBUFFERED=1"}, py, append([]string{"setup.py"}, args...)...)
	defer asowner.Release(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return -1, nil, err
	}
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l := strings.TrimRight(sc.Text(), "\r")
			lines = append(lines, l)
			say(l)
		}
		// A line longer than the scanner holds stops it: the rest is
		// drained, else the setup blocks on its full pipe and Wait never
		// returns.
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), lines, nil
	}
	return 0, lines, err
}

// startAndWait starts Strata on the config in the settings (the one that
// ran) and waits until it is ready or failed; it returns the engine it runs.
func (d *Daemon) startAndWait(ctx context.Context, root string, say func(string)) (version string, ready bool, why string) {
	s, err := settings.LoadDefault()
	if err != nil || s == nil {
		s = &settings.Settings{}
	}
	cfg := d.current().path()
	in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: root, Config: cfg})
	if err != nil {
		return "", false, err.Error()
	}
	next, err := d.prepare(in, nil, false)
	if err != nil {
		return "", false, err.Error()
	}
	d.tracker.Update(func(st *controlapi.State) { st.Config, st.Vision = configState(in, nil, s) })
	seq := d.bus.Last()
	bound := d.startBound()
	if last := lastStart(); last > 0 {
		say(fmt.Sprintf("starting Strata (its last start took %s; if it is not ready within %s, what ran before is put back)", last.Round(time.Second), bound.Round(time.Second)))
	} else {
		say(fmt.Sprintf("starting Strata (if it is not ready within %s, what ran before is put back)", bound.Round(time.Second)))
	}
	d.start(ctx, next)
	return d.waitStart(ctx, seq, bound)
}
