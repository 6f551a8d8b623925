package secondpc

import (
	"bytes"
	"context"
	"io"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// ProbeResult is what Probe found.
type ProbeResult struct {
	// HostKeyFingerprint is the key the server presented.
	HostKeyFingerprint string
	// Pinned says this probe pinned the host key (a first contact accepted
	// with PinAccepted set).
	Pinned bool
	Link   *linkprobe.Result
}

// Probe logs in and measures the second PC and the link (linkprobe.Run).
// When the user accepted an unknown host key and pin is true, the key is
// pinned in the companion's known-hosts; the wizard pins only at pairing.
// A login failure is returned as is (sshx.Classify tells its kind).
func Probe(ctx context.Context, l *Login, opts linkprobe.Options, pin bool) (*ProbeResult, error) {
	c, err := l.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	out := &ProbeResult{}
	kh := l.KnownHosts
	if pin && kh.AcceptedNew() {
		if err := sshx.Pin(kh.File, l.Endpoint, kh.Presented()); err != nil {
			return nil, err
		}
		out.Pinned = true
	}
	if p := kh.Presented(); p != nil {
		out.HostKeyFingerprint = sshx.Fingerprint(p)
	}
	out.Link = linkprobe.Run(ctx, c, l.Endpoint.String(), opts)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// PairedProbeOptions fills opts from the paired record rm (nil: opts as
// they are): its folder when opts names none, its encoder, and the agent's
// path and OS there, so that a probe with the companion's key alone works
// when that key runs only the agent (linkprobe asks the agent when the
// shell refuses).
func PairedProbeOptions(opts linkprobe.Options, rm *settings.Remote) linkprobe.Options {
	if rm == nil {
		return opts
	}
	if opts.RemoteDir == "" {
		opts.RemoteDir = rm.RemoteDir
	}
	if opts.EncoderPath == "" {
		opts.EncoderPath = rm.EncoderPath
	}
	if rm.RemoteDir != "" {
		goos := remote.RemoteOS(rm.OS, rm.RemoteDir)
		opts.Agent = remotecmd.Join(goos, rm.RemoteDir, remote.AgentName(goos))
		opts.AgentOS = goos
	}
	return opts
}

// PairOptions are what pairing needs beyond the login.
type PairOptions struct {
	// KeyFile is the companion's private key (default locations.RelayKeyFile()).
	KeyFile string
	// AuthorizedKeysFile and ForcedCommand: see pairing.Options.
	AuthorizedKeysFile, ForcedCommand string
	// Progress is told each step in words.
	Progress func(step string)
	// Agent finds the strata-vision-relay build a Windows second PC gets:
	// it installs the key there (ACLs through the Windows API) instead of
	// a PowerShell script (docs/second-pc.md).
	Agent AgentFinder
	// AgentBinary, when set, replaces Agent.Find (the wizard's tests).
	AgentBinary func(goos, goarch string) (string, error)
	// ShellKey, AllowInstall, LocalEncoder, Encoder, From, RemoteDir: see
	// pairing.Options. The key is agent-only unless ShellKey or
	// ForcedCommand is set; LocalEncoder is this PC's strata-vision (see
	// LocalEncoder), pinned when the second PC's OS and arch match.
	ShellKey     bool
	AllowInstall []string
	LocalEncoder string
	Encoder      string
	From         string
	RemoteDir    string
}

// LocalEncoder is this PC's strata-vision as Strata's install holds it
// (cfg's ROOT/engine/strata-vision[.exe]), or "" (cfg nil, or none there):
// the build prepare copies, and the one pairing pins for it.
func LocalEncoder(cfg *strataconfig.Config) string {
	if cfg == nil {
		return ""
	}
	return cfg.LocalEncoder()
}

// Pair makes (or reuses) the companion's key, installs it on the second PC,
// proves it, pins the host key, finds the MAC address of the card the
// connection uses and records the second PC through rec.
func Pair(ctx context.Context, l *Login, o PairOptions, rec Recorder) (*pairing.Result, error) {
	auth, password, closeFn, err := l.Creds.Methods(l.Endpoint, l.HostConfig)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	find := o.Agent.Find
	if o.AgentBinary != nil {
		find = o.AgentBinary
	}
	po := pairing.Options{Endpoint: l.Endpoint, Auth: auth, Password: password, KnownHosts: l.KnownHosts,
		KeyFile: o.KeyFile, Recorder: rec, AuthorizedKeysFile: o.AuthorizedKeysFile,
		ForcedCommand: o.ForcedCommand, Timeout: l.Timeout, Progress: o.Progress, AgentBinary: find,
		ShellKey: o.ShellKey, AllowInstall: o.AllowInstall, LocalEncoder: o.LocalEncoder, Encoder: o.Encoder,
		From: o.From, RemoteDir: o.RemoteDir}
	var res *pairing.Result
	err = withHostKeyQuestion(ctx, l.KnownHosts, l.Confirm, func() error {
		var err error
		res, err = pairing.Pair(ctx, po)
		return err
	})
	return res, l.Creds.explain(err, auth)
}

// UnpairOptions for Unpair.
type UnpairOptions struct {
	// Creds are the user's own, tried when the companion's key is refused.
	Creds          Credentials
	KnownHostsFile string // default the companion's
	// AuthorizedKeysFile: see pairing.UnpairOptions.
	AuthorizedKeysFile string
	Force              bool
	Timeout            time.Duration
	Progress           func(step string)
	// Agent as in PairOptions (a Windows PC's line is removed by the agent).
	Agent AgentFinder
}

// Unpair takes the companion's key off the paired second PC (the one rec
// holds), then removes the local key and pin and has rec forget it.
func Unpair(ctx context.Context, o UnpairOptions, rec Recorder) (*settings.Remote, error) {
	rm, err := rec.Paired(ctx)
	if err != nil {
		return nil, err
	}
	if rm == nil || rm.Host == "" {
		return nil, pairing.ErrNotPaired
	}
	ep := sshx.Endpoint{User: rm.User, Host: rm.Host, Port: rm.Port}
	var auth []ssh.AuthMethod
	var password func() (string, error)
	if a, p, closeFn, err := o.Creds.Methods(ep, sshx.HostConfig{}); err == nil {
		defer closeFn()
		auth, password = a, p
	}
	return pairing.Unpair(ctx, pairing.UnpairOptions{Remote: rm, Recorder: rec, KnownHosts: o.KnownHostsFile,
		Auth: auth, Password: password, AuthorizedKeysFile: o.AuthorizedKeysFile, Force: o.Force,
		Timeout: o.Timeout, Progress: o.Progress, AgentBinary: o.Agent.Find})
}

// lineFunc calls f for each complete line written.
type lineFunc struct {
	f   func(string)
	buf []byte
}

func (l *lineFunc) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.f(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

// LineWriter returns a writer that calls f with each line written (the
// relay's Prepare reports on an io.Writer; the wizard shows steps).
func LineWriter(f func(line string)) io.Writer { return &lineFunc{f: f} }
