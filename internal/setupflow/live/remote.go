package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// Remote reaches the second PC with the companion's ssh layer (sshx), the
// link probe (linkprobe), pairing (pairing) and the relay's Prepare.
// Suggestions come from the user's ~/.ssh/config (kevinburke/ssh_config, not
// a hand-written parser).
//
// Pairing writes the companion's key and the host-key pin at once (the
// second PC must accept the key before Prepare can use it), but not the
// companion settings: Pair is given a scratch settings file, and the flow
// writes the second PC into the real settings only at Apply. A Cancel before
// Apply calls Unpair, which takes our key off the second PC and removes the
// local key and pin again.
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
	// (default: beside this program).
	AgentBinary func(goos, goarch string) (string, error)
	// Scratch holds the settings file pairing writes (default a temp dir).
	Scratch string
	// Link tunes the link probe (zero: linkprobe's defaults, 4 MiB each way).
	Link linkprobe.Options

	mu      sync.Mutex
	scratch string
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
	return sshx.UserSSHConfigFiles()
}

// scratchSettings is the settings file pairing may write.
func (r *Remote) scratchSettings() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scratch == "" {
		dir := r.Scratch
		if dir == "" {
			d, err := os.MkdirTemp("", "strata-setup-pairing-")
			if err != nil {
				return "", err
			}
			dir = d
		}
		r.scratch = filepath.Join(dir, "settings.json")
	}
	return r.scratch, nil
}

// Suggestions lists the concrete Host entries (no wildcards) of ~/.ssh/config.
func (r *Remote) Suggestions() []setupflow.HostSuggestion {
	var out []setupflow.HostSuggestion
	seen := map[string]bool{}
	for _, path := range r.sshConfigFiles() {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		cfg, err := ssh_config.Decode(f)
		f.Close()
		if err != nil {
			continue
		}
		for _, h := range cfg.Hosts {
			for _, p := range h.Patterns {
				alias := p.String()
				if alias == "" || strings.ContainsAny(alias, "*?!") || seen[alias] {
					continue
				}
				seen[alias] = true
				s := setupflow.HostSuggestion{Alias: alias}
				s.HostName, _ = cfg.Get(alias, "HostName")
				s.User, _ = cfg.Get(alias, "User")
				if port, _ := cfg.Get(alias, "Port"); port != "" {
					s.Port, _ = strconv.Atoi(port)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// endpoint resolves the target through the ssh config.
func (r *Remote) endpoint(t setupflow.RemoteTarget) (sshx.Endpoint, sshx.HostConfig, error) {
	ep, err := sshx.ParseEndpoint(t.Address)
	if err != nil {
		return ep, sshx.HostConfig{}, err
	}
	if ep.User == "" {
		ep.User = t.User
	}
	return sshx.Resolve(ep, r.sshConfigFiles()...)
}

// credentials are the user's own: agent and keys, then the password typed.
func (r *Remote) credentials(t setupflow.RemoteTarget, hc sshx.HostConfig) ([]ssh.AuthMethod, func() (string, error), func(), error) {
	ua := sshx.UserAuth{NoAgent: r.NoAgent || !t.UseAgent}
	switch {
	case r.IdentityFiles != nil:
		ua.IdentityFiles = r.IdentityFiles
	case t.UseAgent && len(hc.IdentityFiles) > 0:
		ua.IdentityFiles = existing(hc.IdentityFiles)
	case t.UseAgent:
		ua.IdentityFiles = existing(sshx.DefaultIdentityFiles())
	}
	auth, closeFn, err := ua.Methods()
	if err != nil {
		return nil, nil, func() {}, err
	}
	var password func() (string, error)
	if t.Password != "" {
		pw := t.Password
		password = func() (string, error) { return pw, nil }
	}
	if len(auth) == 0 && password == nil {
		closeFn()
		return nil, nil, func() {}, errors.New("no way to sign in: no ssh agent or key was found; choose Password and type it")
	}
	return auth, password, closeFn, nil
}

func existing(files []string) []string {
	var out []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil && f != "" {
			out = append(out, f)
		}
	}
	return out
}

// confirmUnknown turns an unknown host key into the user's question; a
// changed key is never asked about (it is a hard stop).
func confirmUnknown(ctx context.Context, err error, ep sshx.Endpoint, confirm setupflow.ConfirmHostKey) (string, error) {
	var hk *sshx.HostKeyError
	if !errors.As(err, &hk) {
		return "", err
	}
	if hk.Changed() || hk.Rejected != "" {
		return "", err
	}
	if confirm == nil || !confirm(ctx, setupflow.HostKey{Address: ep.String(), Type: hk.Key.Type(), Fingerprint: hk.Fingerprint}) {
		return "", setupflow.ErrHostKeyRejected
	}
	return hk.Fingerprint, nil
}

// Probe dials with the user's credentials (asking about an unknown host key
// first) and measures the second PC and the link. It pins nothing.
func (r *Remote) Probe(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*setupflow.RemoteReport, error) {
	ep, hc, err := r.endpoint(t)
	if err != nil {
		return nil, err
	}
	auth, password, closeFn, err := r.credentials(t, hc)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	kh := &sshx.KnownHosts{File: r.knownHosts()}
	cfg := sshx.Config{Endpoint: ep, Auth: auth, Password: password, HostKeyCallback: kh.Callback, HostKeyAlgorithms: kh.Algorithms(ep)}
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 0.05, Text: "Connecting to " + ep.String()})
	c, err := sshx.Dial(ctx, cfg)
	if err != nil {
		fp, cerr := confirmUnknown(ctx, err, ep, confirm)
		if cerr != nil {
			return nil, cerr
		}
		kh.Accept = fp
		progress(setupflow.Progress{Step: "remote-probe", Fraction: 0.1, Text: "Connecting to " + ep.String()})
		if c, err = sshx.Dial(ctx, cfg); err != nil {
			return nil, err
		}
	}
	defer c.Close()
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 0.3, Text: "Measuring its GPUs, the round trip and the throughput (a few MB each way)"})
	res := linkprobe.Run(ctx, c, ep.String(), r.Link)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	progress(setupflow.Progress{Step: "remote-probe", Fraction: 1, Text: "Done"})
	rep := &setupflow.RemoteReport{Address: ep.String(), OS: res.OS, Arch: res.Arch, GPUs: convertGPUs(res.GPUs),
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

// Pair installs the companion's own key there and pins the host key.
func (r *Remote) Pair(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*settings.Remote, error) {
	ep, hc, err := r.endpoint(t)
	if err != nil {
		return nil, err
	}
	auth, password, closeFn, err := r.credentials(t, hc)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	scratch, err := r.scratchSettings()
	if err != nil {
		return nil, err
	}
	kh := &sshx.KnownHosts{File: r.knownHosts()}
	step := 0.0
	o := pairing.Options{Endpoint: ep, Auth: auth, Password: password, KnownHosts: kh, KeyFile: r.KeyFile,
		SettingsFile: scratch, AuthorizedKeysFile: r.AuthorizedKeysFile,
		Progress: func(s string) {
			step = min(step+0.2, 0.9)
			progress(setupflow.Progress{Step: "pair", Fraction: step, Text: upperFirst(s)})
		}}
	res, err := pairing.Pair(ctx, o)
	if err != nil {
		fp, cerr := confirmUnknown(ctx, err, ep, confirm)
		if cerr != nil {
			return nil, cerr
		}
		kh.Accept = fp
		if res, err = pairing.Pair(ctx, o); err != nil {
			return nil, err
		}
	}
	progress(setupflow.Progress{Step: "pair", Fraction: 1, Text: "Paired"})
	rm := res.Remote
	rm.OS, rm.Arch = res.OS, res.Arch
	return &rm, nil
}

// Prepare copies the agent, the mmproj and the vocabulary stub and checks
// the encoder answers READY there.
func (r *Remote) Prepare(ctx context.Context, rm *settings.Remote, in setupflow.Install, configPath string, progress func(setupflow.Progress)) (*settings.Remote, error) {
	o := relay.PrepareOptions{Remote: *rm, LocalOS: runtime.GOOS, LocalArch: runtime.GOARCH}
	cfg, err := strataconfig.Read(configPath)
	if err != nil {
		return nil, err
	}
	if cfg.Vision == nil {
		return nil, fmt.Errorf("%s has no vision block, so there is no mmproj to send; run Strata's setup with vision on first", configPath)
	}
	base := cfg.Cwd
	if base == "" {
		base = in.Root
	}
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(base, p)
		}
		return p
	}
	o.Mmproj, o.Model, o.GPU, o.MaxTokens = abs(cfg.Vision.MMProj), abs(cfg.Vision.Model), true, cfg.Vision.MaxTokens
	if p := filepath.Join(in.Root, "engine", "strata-vision"+exeSuffix); fileExists(p) {
		o.LocalEncoder = p
	}
	o.AgentBinary = r.AgentBinary
	if o.AgentBinary == nil {
		o.AgentBinary = agentBinary
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		n := 0.0
		for sc.Scan() {
			n = min(n+0.08, 0.95)
			progress(setupflow.Progress{Step: "prepare", Fraction: n, Text: upperFirst(strings.TrimSpace(sc.Text()))})
		}
	}()
	o.Progress = pw
	res, err := relay.Prepare(ctx, o)
	pw.Close()
	<-done
	if err != nil {
		return nil, err
	}
	progress(setupflow.Progress{Step: "prepare", Fraction: 1, Text: fmt.Sprintf("The encoder there answered READY %d", res.NEmbd)})
	n := *rm
	n.RemoteDir, n.OS, n.Arch, n.EncoderPath, n.NEmbd = res.RemoteDir, res.OS, res.Arch, res.EncoderPath, res.NEmbd
	return &n, nil
}

// Unpair takes our key off the second PC and removes the local key and pin.
func (r *Remote) Unpair(ctx context.Context, rm *settings.Remote) error {
	scratch, err := r.scratchSettings()
	if err != nil {
		return err
	}
	st := &settings.Settings{Remote: rm}
	if err := st.Save(scratch); err != nil {
		return err
	}
	_, err = pairing.Unpair(ctx, pairing.UnpairOptions{SettingsFile: scratch, KnownHosts: r.knownHosts(),
		AuthorizedKeysFile: r.AuthorizedKeysFile, Force: true})
	return err
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// agentBinary finds strata-vision-relay for goos/goarch beside this program
// (the installer puts the other platforms' builds in <os>-<arch>/).
func agentBinary(goos, goarch string) (string, error) {
	name := relay.AgentName(goos)
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	here := filepath.Dir(self)
	var cands []string
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		cands = append(cands, filepath.Join(here, name))
	}
	cands = append(cands, filepath.Join(here, goos+"-"+goarch, name),
		filepath.Join(here, "strata-vision-relay-"+goos+"-"+goarch+filepath.Ext(name)))
	for _, c := range cands {
		if fileExists(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("no strata-vision-relay build for %s/%s beside %s (looked for %s); reinstall Strata Companion", goos, goarch, self, strings.Join(cands, ", "))
}
