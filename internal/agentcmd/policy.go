package agentcmd

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// Policy is what the gate of an agent-only key admits: the agent's own
// work, on files in its own folder, with programs pinned at pairing.
type Policy struct {
	// OS is the second PC's ("windows", else POSIX): how its paths read.
	OS string
	// Self is the agent program's own absolute path (links resolved).
	Self string
	// Pins are what pairing pinned in the forced command.
	Pins Gate
}

// Admit parses nothing: it takes a parsed Command and says whether the gate
// runs it, returning it with every file made absolute and clean (what the
// agent then runs), or an error that says why not.
//
//   - kill: any process id; the gate itself checks the process is this agent;
//   - version, unpair, sink, source N: as parsed;
//   - probe: --encoder in the agent's folder or the pinned encoder, --file
//     names in the agent's folder;
//   - agent: --encoder, --mmproj, --model in the agent's folder (the encoder
//     may be the pinned one), --install-sha256 only with sums pinned at
//     pairing, --dir and --scratch refused, Strata's arguments (data) only
//     where they are not options the agent sets itself (EncoderOwned).
//
// Everything else (the gate itself, another program) is refused.
func (p Policy) Admit(c Command) (Command, error) {
	if c.Verb == VerbKill {
		return c, nil
	}
	if !p.samePath(p.base(c.Program), p.base(p.Self)) {
		return c, fmt.Errorf("%s is not the agent", c.Program)
	}
	dir := p.dir(p.Self)
	switch c.Verb {
	case VerbVersion, VerbUnpair, VerbSink, VerbSource:
		return c, nil
	case VerbProbe:
		if c.Probe.Encoder != "" {
			e, err := p.file(dir, "encoder", c.Probe.Encoder, true)
			if err != nil {
				return c, fmt.Errorf("probe: %v", err)
			}
			c.Probe.Encoder = e
		}
		for _, f := range c.Probe.Files {
			if hasDotDot(f) {
				return c, fmt.Errorf("probe: --file %q steps out with \"..\"; the agent answers only about its own folder", f)
			}
			if remotecmd.IsAbs(p.OS, f) || (remotecmd.Windows(p.OS) && strings.Contains(f, ":")) {
				if !p.inside(dir, p.clean(f)) {
					return c, fmt.Errorf("probe: --file %q is not a name in the agent's folder", f)
				}
			}
		}
		return c, nil
	case VerbAgent:
		a := &c.Agent
		if a.Dir != "" || a.Scratch != "" {
			return c, errors.New("--dir and --scratch are not allowed")
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{FlagEncoder, &a.Encoder}, {FlagMmproj, &a.Mmproj}, {FlagModel, &a.Model}} {
			if *f.v == "" {
				continue
			}
			v, err := p.file(dir, f.name, *f.v, f.name == FlagEncoder)
			if err != nil {
				return c, err
			}
			*f.v = v
		}
		for _, sum := range a.InstallSHA256 {
			if !p.allowed(sum) {
				return c, fmt.Errorf("the program with sha256 %s was not allowed at pairing; pair the second PC again to install another build", sum)
			}
		}
		for _, x := range a.EncoderArgs {
			if IsEncoderOwned(x) {
				return c, fmt.Errorf("%s is set by the agent itself, not passed on among Strata's arguments", x)
			}
		}
		return c, nil
	}
	return c, errors.New("only its agent, probe, version, unpair and the stop of a hung agent are allowed")
}

// file admits one file the command names: in dir (relative names are
// joined to it), or (pinnable) the encoder pinned at pairing.
func (p Policy) file(dir, name, v string, pinnable bool) (string, error) {
	if hasDotDot(v) {
		return "", fmt.Errorf("--%s %s steps out with \"..\"", name, v)
	}
	abs := v
	if !remotecmd.IsAbs(p.OS, abs) {
		abs = remotecmd.Join(p.OS, dir, abs)
	}
	abs = p.clean(abs)
	if pinnable && p.Pins.Encoder != "" && remotecmd.IsAbs(p.OS, p.Pins.Encoder) && p.samePath(abs, p.clean(p.Pins.Encoder)) {
		return abs, nil
	}
	if !p.inside(dir, abs) {
		what := "outside the agent's folder " + dir
		if pinnable {
			what += " and not the encoder pinned at pairing"
		}
		return "", fmt.Errorf("--%s %s is %s", name, v, what)
	}
	return abs, nil
}

func (p Policy) allowed(sum string) bool {
	for _, a := range p.Pins.Allow {
		if a != "" && strings.EqualFold(a, sum) {
			return true
		}
	}
	return false
}

// The second PC's paths, read as its OS reads them (so the policy is the
// same code on every OS, and testable on any).

func (p Policy) slash(s string) string {
	if remotecmd.Windows(p.OS) {
		return strings.ReplaceAll(s, `\`, "/")
	}
	return s
}

func (p Policy) unslash(s string) string {
	if remotecmd.Windows(p.OS) {
		return strings.ReplaceAll(s, "/", `\`)
	}
	return s
}

func (p Policy) clean(s string) string { return p.unslash(path.Clean(p.slash(s))) }
func (p Policy) base(s string) string  { return path.Base(p.slash(s)) }
func (p Policy) dir(s string) string   { return p.unslash(path.Dir(p.slash(s))) }

func (p Policy) samePath(a, b string) bool {
	if remotecmd.Windows(p.OS) {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// inside: f is below dir (both absolute and clean).
func (p Policy) inside(dir, f string) bool {
	d, x := p.slash(p.clean(dir)), p.slash(p.clean(f))
	if remotecmd.Windows(p.OS) {
		d, x = strings.ToLower(d), strings.ToLower(x)
	}
	if d == "/" {
		return strings.HasPrefix(x, "/") && x != "/"
	}
	return strings.HasPrefix(x, d+"/")
}

func hasDotDot(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}
