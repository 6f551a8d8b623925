// Package termsetup is strata-setup's flow in a terminal
// (`strata-service setup --cli`), driven by the same state machine
// (internal/setupflow) and the same adapters as the window.
package termsetup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Options are the terminal's streams and the answers given as flags.
type Options struct {
	In  io.Reader // the answers; a terminal (an *os.File) hides the password typed
	Out io.Writer // the questions and the progress
	// Yes takes the default answer wherever it is safe (never trusts a new
	// host key).
	Yes bool
	// AcceptHostKey trusts the second PC's host key if its fingerprint is
	// this (SHA256:...).
	AcceptHostKey string
	// Page starts at this page (setupflow.ParsePage's names); "" is the start.
	Page string
}

// Run runs the setup in the terminal. deps builds the adapters around the
// host-key question Run asks (live.Deps for the real PC, a demo world in
// tests). It returns nil when the setup is done, an error wrapping
// setupflow.ErrCancelled when the user cancelled, another error when it
// did not complete (the reason is printed on Out first).
func Run(ctx context.Context, deps func(setupflow.ConfirmHostKey) setupflow.Deps, o Options) error {
	var opts setupflow.Options
	if o.Page != "" {
		p, err := setupflow.ParsePage(o.Page)
		if err != nil {
			return err
		}
		opts.StartPage = p
	}
	c := &cliSetup{stdin: o.In, in: bufio.NewReader(o.In), out: o.Out, yes: o.Yes, accept: o.AcceptHostKey}
	f, err := setupflow.New(ctx, deps(c.confirmHostKey), opts)
	if err != nil {
		return err
	}
	c.f = f
	return c.run(ctx)
}

// cliSetup is one run of the terminal wizard.
type cliSetup struct {
	stdin  io.Reader
	f      *setupflow.Flow
	in     *bufio.Reader
	out    io.Writer
	yes    bool
	accept string
}

// errBack and errQuit are the answers "b" and "q" at any prompt.
var (
	errBack = errors.New("back")
	errQuit = errors.New("quit")
)

func (c *cliSetup) printf(format string, a ...any) { fmt.Fprintf(c.out, format, a...) }

// ask prints a prompt and reads a line; "" takes def. With --yes and a
// default it answers def without reading.
func (c *cliSetup) ask(prompt, def string, safeDefault bool) (string, error) {
	if c.yes && safeDefault {
		c.printf("%s [%s] %s (--yes)\n", prompt, def, def)
		return def, nil
	}
	if def != "" {
		c.printf("%s [%s] ", prompt, def)
	} else {
		c.printf("%s ", prompt)
	}
	line, err := c.in.ReadString('\n')
	line = strings.TrimSpace(line)
	if err != nil && line == "" {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%w: the input ended (answer the questions, or pass --yes for the defaults)", errQuit)
		}
		return "", err
	}
	switch strings.ToLower(line) {
	case "b", "back":
		return "", errBack
	case "q", "quit", "cancel":
		return "", errQuit
	case "":
		return def, nil
	}
	return line, nil
}

func (c *cliSetup) yesNo(prompt string, def bool, safe bool) (bool, error) {
	d := "n"
	if def {
		d = "y"
	}
	for {
		a, err := c.ask(prompt+" (y/n)", d, safe)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(a) {
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		c.printf("Please answer y or n (b: back, q: cancel).\n")
	}
}

// choose shows numbered options and returns the index picked.
func (c *cliSetup) choose(prompt string, options []string, def int) (int, error) {
	for i, o := range options {
		mark := " "
		if i == def {
			mark = "*"
		}
		c.printf(" %s %d) %s\n", mark, i+1, o)
	}
	for {
		a, err := c.ask(prompt, strconv.Itoa(def+1), def >= 0)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(a)
		if err == nil && n >= 1 && n <= len(options) {
			return n - 1, nil
		}
		c.printf("Type a number from 1 to %d (b: back, q: cancel).\n", len(options))
	}
}

func (c *cliSetup) progress(p setupflow.Progress) {
	switch {
	case p.LogLine != "":
		c.printf("    | %s\n", p.LogLine)
	case p.Text != "" && p.Fraction >= 0:
		c.printf("  [%3.0f%%] %s\n", p.Fraction*100, p.Text)
	case p.Text != "":
		c.printf("  ...    %s\n", p.Text)
	}
}

func (c *cliSetup) confirmHostKey(ctx context.Context, k setupflow.HostKey) bool {
	c.printf("\nThe second PC %s is new to Strata Companion. Its host key is\n    %s %s\n", k.Address, k.Type, k.Fingerprint)
	if c.accept != "" {
		if c.accept == k.Fingerprint {
			c.printf("It matches --accept-host-key: trusted.\n")
			return true
		}
		c.printf("It does NOT match --accept-host-key %s: not trusted.\n", c.accept)
		return false
	}
	c.printf("Check it on that PC (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) before you trust it.\n")
	a, err := c.ask("Type the word yes to trust it:", "", false)
	return err == nil && a == "yes"
}

func (c *cliSetup) run(ctx context.Context) error {
	c.printf("Strata Companion setup. At any question: b goes back, q cancels (nothing is changed before Apply).\n")
	if n := c.f.Notice(); n != "" {
		c.printf("%s\n", n)
	}
	for {
		p := c.f.Page()
		if p != setupflow.PageApply && p != setupflow.PageDone {
			c.printf("\n== %s ==\n", p.Title())
		}
		err := c.page(ctx, p)
		if ctx.Err() != nil && err != nil {
			var ae *setupflow.ApplyError
			if errors.As(err, &ae) { // interrupted while applying: say what was put back
				c.printf("\n%s\n", err)
			}
			err = errQuit
		}
		switch {
		case err == nil:
			if p == setupflow.PageDone {
				return nil
			}
			if _, nerr := c.f.Next(); nerr != nil {
				c.printf("%s\n", nerr)
			}
		case errors.Is(err, errBack):
			if _, berr := c.f.Back(); berr != nil {
				c.printf("%s\n", berr)
			}
		case errors.Is(err, errQuit):
			c.printf("\n")
			res := c.f.Cancel()
			for _, m := range res.Messages {
				c.printf("%s\n", m)
			}
			return setupflow.ErrCancelled
		default:
			var ae *setupflow.ApplyError
			if errors.As(err, &ae) {
				c.printf("\n%s\n", err)
				back, aerr := c.yesNo("Go back to Review and try again?", false, false)
				if aerr != nil || !back {
					return errors.New("setup did not complete; see above")
				}
				c.f.Back()
				continue
			}
			c.printf("%s\n", err)
			if c.yes {
				return err
			}
		}
	}
}

func (c *cliSetup) page(ctx context.Context, p setupflow.Page) error {
	f := c.f
	switch p {
	case setupflow.PageWelcome:
		c.printf("This finds Strata, looks at this PC, lets you choose where pictures are read,\nshows the exact change to Strata's config, then installs the service and starts Strata.\n")
		_, err := c.ask("Press Enter to begin.", "", true)
		return err

	case setupflow.PageFindStrata:
		if len(f.Find.Installs()) == 0 {
			c.printf("  Looking for Strata...\n")
			if _, err := f.Find.Search(ctx); err != nil {
				c.printf("%s\n", err)
			}
		}
		for len(f.Find.Installs()) == 0 {
			dir, err := c.ask("Type the Strata folder (the one holding serve/ and engine/):", "", false)
			if err != nil {
				return err
			}
			if _, err := f.Find.Browse(ctx, dir); err != nil {
				c.printf("%s\n", err)
			}
		}
		ins := f.Find.Installs()
		sel, _, _ := f.Find.Selected()
		var opts []string
		def := -1
		for i, in := range ins {
			s := in.Root
			if len(in.Problems) > 0 {
				s += "  (cannot run yet: " + strings.Join(in.Problems, "; ") + ")"
			}
			if in.Root == sel.Root {
				def = i
			}
			opts = append(opts, s)
		}
		i, err := c.choose("Which Strata install?", opts, def)
		if err != nil {
			return err
		}
		f.Find.SelectInstall(i)
		in, cfg, _ := f.Find.Selected()
		if cfg == "" && len(in.Configs) > 1 {
			j, err := c.choose("Which config (model) does Strata use?", in.Configs, -1)
			if err != nil {
				return err
			}
			f.Find.SelectConfig(in.Configs[j])
		}
		return f.CanNext()

	case setupflow.PageThisPC:
		m, _ := f.Choice.Probe(ctx, c.progress)
		if m == nil {
			return ctx.Err()
		}
		for _, g := range m.GPUs {
			c.printf("  GPU %d: %s, %.1f GB (%.1f GB free), driver %s\n", g.Index, g.Name, float64(g.TotalMiB)/1024, float64(g.FreeMiB)/1024, g.Driver)
		}
		if len(m.GPUs) == 0 {
			c.printf("  No NVIDIA GPU found.\n")
		}
		c.printf("  CPU: %s (%d cores, %d threads); memory %.1f GB (%.1f GB free)\n", m.CPU, m.Cores, m.Threads, float64(m.RAMMiB)/1024, float64(m.FreeMiB)/1024)
		for _, w := range m.Warnings {
			c.printf("  ! %s\n", w)
		}
		return nil

	case setupflow.PagePlacement:
		if f.Choice.Machine() == nil {
			if _, err := f.Choice.Probe(ctx, c.progress); ctx.Err() != nil {
				return err
			}
		}
		rec := f.Choice.Recommendation()
		ch := f.Choice.Current()
		c.printf("Recommended: %s. %s\n", labelOf(rec, rec.Best), rec.Reason)
		var opts []string
		def := -1
		var avail []setupflow.Option
		for _, o := range rec.Options {
			if !o.Available {
				c.printf("    (%s: not possible here: %s)\n", o.Label, o.Why)
				continue
			}
			s := o.Label
			if rec.IsBest(o) {
				s += " (recommended)"
			}
			if fig := strings.Join(o.Figures(), ", "); fig != "" {
				s += ": " + fig
			}
			if o.Placement == ch.Placement && def < 0 {
				def = len(avail)
			}
			avail = append(avail, o)
			opts = append(opts, s)
		}
		i, err := c.choose("Where should pictures be read?", opts, def)
		if err != nil {
			return err
		}
		return f.Choice.Choose(avail[i].Placement, avail[i].Device)

	case setupflow.PageSecondPC:
		return c.secondPC(ctx)

	case setupflow.PageReview:
		rv, err := f.Apply.PlanReview(ctx)
		if err != nil {
			return err
		}
		c.printf("%s.\n\n", rv.Summary)
		if rv.Diff == "" {
			c.printf("%s already says this; it will not be changed.\n", rv.ConfigPath)
		} else {
			c.printf("The change to %s (a backup is kept):\n%s\n", rv.ConfigPath, rv.Diff)
		}
		for _, l := range rv.Service {
			c.printf("  %s\n", l)
		}
		tray, err := c.yesNo("Start the tray icon when you log in?", rv.TrayAtLogin, true)
		if err != nil {
			return err
		}
		f.Apply.SetTrayAtLogin(tray)
		ok, err := c.yesNo("Apply now?", true, true)
		if err != nil {
			return err
		}
		if !ok {
			return errQuit
		}
		return nil

	case setupflow.PageApply:
		c.printf("\n== Apply ==\n")
		return f.Apply.Run(ctx, c.progress)

	case setupflow.PageDone:
		c.printf("\n== Done ==\n")
		_, lines := f.Apply.Applied()
		for _, l := range lines {
			c.printf("%s\n", l)
		}
		c.printf("Strata Companion is set up; the service starts Strata at boot.\n")
		return nil
	}
	return nil
}

func (c *cliSetup) secondPC(ctx context.Context) error {
	f := c.f
	if _, paired, prepared := f.SecondPC.State(); paired && prepared {
		keep, err := c.yesNo("The second PC "+f.SecondPC.Target().String()+" is paired and prepared. Keep it?", true, true)
		if err != nil {
			return err
		}
		if keep {
			return c.secondPCOptions()
		}
	}
	sugg := f.SecondPC.Suggestions()
	if len(sugg) > 0 {
		c.printf("Hosts from your ~/.ssh/config:\n")
		for i, s := range sugg {
			c.printf("   %d) %s (%s)\n", i+1, s.Alias, s.HostName)
		}
	}
	t := f.SecondPC.Target()
	a, err := c.ask("The second PC's address (a name, an IP, or a number above):", t.Address, t.Address != "")
	if err != nil {
		return err
	}
	user := t.User
	if n, err := strconv.Atoi(a); err == nil && n >= 1 && n <= len(sugg) {
		a, user = sugg[n-1].Alias, sugg[n-1].User
	}
	if !strings.Contains(a, "@") {
		if user, err = c.ask("Your user name on that PC:", user, user != ""); err != nil {
			return err
		}
	}
	usePw, err := c.yesNo("Sign in with a password (no: your ssh agent or keys)?", false, true)
	if err != nil {
		return err
	}
	nt := setupflow.RemoteTarget{Address: a, User: user, UseAgent: !usePw}
	if usePw {
		if nt.Password, err = c.readPassword(); err != nil {
			return err
		}
	}
	f.SecondPC.SetTarget(nt)
	r, err := f.SecondPC.Probe(ctx, c.progress)
	if err != nil {
		return err
	}
	c.printf("  %s/%s, %s, %.1f GB free VRAM; round trip %.1f ms; %.0f MB/s up, %.0f MB/s down\n",
		r.OS, r.Arch, r.GPUName(), float64(r.FreeVRAMMiB())/1024, r.RTTms, r.UpMBps, r.DownMBps)
	if r.PictureSeconds > 0 {
		c.printf("  One picture would take about %s.\n", setupflow.FormatSeconds(r.PictureSeconds))
	}
	for _, p := range r.Problems {
		c.printf("  ! %s\n", p)
	}
	ok, err := c.yesNo("Pair with it and prepare it (copies the encoder's files there)?", true, true)
	if err != nil || !ok {
		if err == nil {
			err = errBack
		}
		return err
	}
	if _, paired, _ := f.SecondPC.State(); !paired {
		if _, err := f.SecondPC.Pair(ctx, c.progress); err != nil {
			return err
		}
	}
	if err := f.SecondPC.Prepare(ctx, c.progress); err != nil {
		return err
	}
	return c.secondPCOptions()
}

// secondPCOptions asks what the wizard's Second PC page asks below pairing:
// the encoder's idle stop and the CPU fallback (defaults: the settings').
func (c *cliSetup) secondPCOptions() error {
	f := c.f
	o := f.SecondPC.Options()
	c.printf("  Waking that PC: %s\n", f.SecondPC.Wake().Describe())
	for {
		a, err := c.ask("Stop its encoder after how long without a picture (e.g. 10m, 600, off)?", settings.FormatIdleStop(o.IdleStopS), true)
		if err != nil {
			return err
		}
		secs, perr := settings.ParseIdleStop(a)
		if perr == nil {
			o.IdleStopS = secs
			break
		}
		c.printf("%v\n", perr)
	}
	fb, err := c.yesNo("When that PC is off, read pictures on this PC's CPU instead (slower)?", o.FallbackCPU, true)
	if err != nil {
		return err
	}
	o.FallbackCPU = fb
	return f.SecondPC.SetOptions(o)
}

func (c *cliSetup) readPassword() (string, error) {
	if fd, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
		c.printf("Password (used once to install the companion's own key; not stored): ")
		b, err := term.ReadPassword(int(fd.Fd()))
		c.printf("\n")
		return string(b), err
	}
	return c.ask("Password (used once; not stored):", "", false)
}

func labelOf(rec setupflow.Recommendation, p settings.Placement) string {
	if o, ok := rec.Option(p); ok {
		return o.Label
	}
	return string(p)
}
