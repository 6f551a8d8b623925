package live

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// Remote is the wizard's side of the second PC: it adapts internal/secondpc
// (the same code the CLI's `probe --ssh` and `remote` commands call) to the
// flow's questions and progress bars.
//
// Pairing writes the companion's key and the host-key pin at once (the
// second PC must accept the key before Prepare can use it), but not the
// companion settings: pairing and prepare record into a
// secondpc.MemoryRecorder, and the flow writes the second PC into the
// settings only at Apply. A Cancel before Apply calls Unpair, which takes our
// key off the second PC and removes the local key and pin again.
type Remote struct {
	// SSHConfig is the user's ssh config file (default ~/.ssh/config, and
	// the system one).
	SSHConfig string
	// KnownHostsFile and KeyFile default to the companion's own.
	KnownHostsFile, KeyFile string
	// AuthorizedKeysFile is passed to pairing (tests; an sshd whose
	// AuthorizedKeysFile is not ~/.ssh/authorized_keys).
	AuthorizedKeysFile string
	// IdentityFiles replace the user's default keys (tests).
	IdentityFiles []string
	// NoAgent skips the ssh-agent (tests).
	NoAgent bool
	// AgentBinary finds the strata-vision-relay build for the second PC
	// (default: secondpc.AgentFinder, beside this program).
	AgentBinary func(goos, goarch string) (string, error)
	// RemoteDir is the agent's folder on the second PC (default
	// strata-companion in that user's home; tests).
	RemoteDir string
	// Link tunes the link probe (zero: linkprobe's defaults, 4 MiB each way).
	Link linkprobe.Options
	// Browse replaces lend.Browse (tests: no multicast on this machine's
	// own network); CodeTimeout bounds each step of a pairing by code
	// (zero: sshx's default). See lend.go.
	Browse      func(ctx context.Context, wait time.Duration) ([]lend.Announcement, error)
	CodeTimeout time.Duration
}

// NewRemote returns the second-PC adapter with the usual places.
func NewRemote() *Remote { return &Remote{} }

func (r *Remote) knownHosts() string {
	if r.KnownHostsFile != "" {
		return r.KnownHostsFile
	}
	return locations.KnownHostsFile()
}

func (r *Remote) sshConfigFiles() []string {
	if r.SSHConfig != "" {
		return []string{r.SSHConfig}
	}
	return nil
}

// Suggestions lists the concrete Host entries (no wildcards) of ~/.ssh/config.
func (r *Remote) Suggestions() []setupflow.HostSuggestion {
	var out []setupflow.HostSuggestion
	for _, s := range secondpc.Suggestions(r.sshConfigFiles()) {
		out = append(out, setupflow.HostSuggestion{Alias: s.Alias, HostName: s.HostName, User: s.User, Port: s.Port})
	}
	return out
}

// login is the second-PC login for what the page holds: the user's agent
// and keys when chosen, the password typed, the page's host-key question.
func (r *Remote) login(t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey) (*secondpc.Login, error) {
	ep, hc, err := secondpc.Endpoint(t.Address, t.User, r.sshConfigFiles())
	if err != nil {
		return nil, err
	}
	c := secondpc.Credentials{NoAgent: r.NoAgent || !t.UseAgent, IdentityFiles: r.IdentityFiles,
		NoDefaultKeys: !t.UseAgent, NoWayHint: "choose Password and type it"}
	if t.Paired != nil {
		c.ExtraKeys = []string{t.Paired.KeyFile} // the paired PC: the companion's own key too
	}
	if t.Password != "" {
		pw := t.Password
		c.Password = func() (string, error) { return pw, nil }
	}
	ask := func(ctx context.Context, hk *sshx.HostKeyError) bool {
		return confirm != nil && confirm(ctx, setupflow.HostKey{Address: ep.String(), Type: hk.Key.Type(), Fingerprint: hk.Fingerprint})
	}
	return &secondpc.Login{Endpoint: ep, HostConfig: hc, Creds: c, KnownHosts: &sshx.KnownHosts{File: r.knownHosts()}, Confirm: ask}, nil
}

// flowError turns secondpc's "not trusted" into the flow's.
func flowError(err error) error {
	if errors.Is(err, secondpc.ErrHostKeyRejected) {
		return setupflow.ErrHostKeyRejected
	}
	return err
}

// Probe dials with the user's credentials (asking about an unknown host key
// first) and measures the second PC and the link. It pins nothing.
func (r *Remote) Probe(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*setupflow.RemoteReport, error) {
	l, err := r.login(t, confirm)
	if err != nil {
		return nil, err
	}
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 0.05, Text: "Connecting to " + l.Endpoint.String() + ", then measuring its GPUs, the round trip and the throughput (a few MB each way)"})
	// The paired PC: its folder and its agent, asked what the companion's
	// key may not run itself (a key paired by code runs only the agent).
	pr, err := secondpc.Probe(ctx, l, secondpc.PairedProbeOptions(r.Link, t.Paired), false)
	if err != nil {
		return nil, flowError(err)
	}
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 1, Text: "Done"})
	res := pr.Link
	rep := &setupflow.RemoteReport{Address: l.Endpoint.String(), OS: res.OS, Arch: res.Arch, GPUs: convertGPUs(res.GPUs),
		RTTms: float64(res.RTT.Microseconds()) / 1000, UpMBps: res.UpBytesPerSec / 1e6, DownMBps: res.DownBytesPerSec / 1e6,
		PictureSeconds: res.Estimate.PictureSeconds}
	for _, f := range res.Findings {
		s := f.What
		if f.Fix != "" {
			s += " " + f.Fix
		}
		rep.Problems = append(rep.Problems, s)
	}
	return rep, nil
}

// Pair installs the companion's own key there, pins the host key and finds
// the MAC address; the second PC is recorded in memory until Apply.
func (r *Remote) Pair(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*settings.Remote, error) {
	l, err := r.login(t, confirm)
	if err != nil {
		return nil, err
	}
	rec := secondpc.NewMemoryRecorder(nil)
	step := 0.0
	// Agent-only (pairing's default): the key on the second PC runs only the
	// companion's agent; this PC's encoder build (the one Prepare copies)
	// is allowed there when that PC has this PC's system.
	var localEncoder string
	if t.StrataRoot != "" {
		localEncoder = secondpc.LocalEncoder(&strataconfig.Config{Root: t.StrataRoot})
	}
	_, err = secondpc.Pair(ctx, l, secondpc.PairOptions{KeyFile: r.KeyFile, AuthorizedKeysFile: r.AuthorizedKeysFile,
		AgentBinary: r.AgentBinary, LocalEncoder: localEncoder, RemoteDir: r.RemoteDir,
		Progress: func(s string) {
			step = min(step+0.15, 0.9)
			progress(setupflow.Progress{Step: "pair", Fraction: step, Text: upperFirst(s)})
		}}, rec)
	if err != nil {
		return nil, flowError(err)
	}
	progress(setupflow.Progress{Step: "pair", Fraction: 1, Text: "Paired"})
	return rec.Remote(), nil
}

// Prepare copies the agent, the mmproj and the vocabulary stub and checks
// the encoder answers READY there. The mmproj, the model, gpu and max_tokens
// come from Strata's config as the CLI's `remote prepare` takes them.
func (r *Remote) Prepare(ctx context.Context, rm *settings.Remote, in setupflow.Install, configPath string, progress func(setupflow.Progress)) (*settings.Remote, error) {
	cfg, err := strataconfig.Read(configPath)
	if err != nil {
		return nil, err
	}
	o, err := secondpc.PrepareOptions(cfg, *rm, secondpc.PrepareChoices{})
	if err != nil {
		return nil, err
	}
	o.AgentBinary = r.AgentBinary
	if o.AgentBinary == nil {
		o.AgentBinary = secondpc.AgentFinder{}.Find
	}
	var mu sync.Mutex
	n := 0.0
	o.Progress = secondpc.LineWriter(func(line string) {
		mu.Lock()
		defer mu.Unlock()
		n = min(n+0.08, 0.95)
		progress(setupflow.Progress{Step: "prepare", Fraction: n, Text: upperFirst(strings.TrimSpace(line))})
	})
	rec := secondpc.NewMemoryRecorder(rm)
	res, err := secondpc.Prepare(ctx, o, rec)
	if err != nil {
		return nil, err
	}
	progress(setupflow.Progress{Step: "prepare", Fraction: 1, Text: fmt.Sprintf("The encoder there answered READY %d", res.NEmbd)})
	return rec.Remote(), nil
}

// Unpair takes our key off the second PC and removes the local key and pin.
func (r *Remote) Unpair(ctx context.Context, rm *settings.Remote) error {
	_, err := secondpc.Unpair(ctx, secondpc.UnpairOptions{KnownHostsFile: r.knownHosts(),
		AuthorizedKeysFile: r.AuthorizedKeysFile, Force: true, Creds: secondpc.Credentials{NoAgent: true, NoDefaultKeys: true}}, secondpc.NewMemoryRecorder(rm))
	return err
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
