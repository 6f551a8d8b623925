// Package pairing sets up the trust the relay uses unattended: with the
// user's own credentials, once, it makes the companion's own ed25519 key,
// installs its public half on the second PC (restricted: no forwarding, no
// pty), pins the second PC's host key, proves the new key logs in alone, and
// hands the second PC to a Recorder (internal/secondpc's, over the settings).
// Unpair removes all of it. This package never writes the settings itself.
package pairing

import (
	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"

	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// Options for Pair. Zero values take the companion's usual places.
type Options struct {
	// Endpoint is the second PC, resolved (sshx.Resolve), with a user.
	Endpoint sshx.Endpoint
	// Auth and Password are the user's own credentials, used for this one
	// login; nothing of them is kept.
	Auth     []ssh.AuthMethod
	Password func() (string, error)
	// KnownHosts checks the host key; its Accept carries the user's explicit
	// yes for a first contact. File defaults to locations.KnownHostsFile().
	KnownHosts *sshx.KnownHosts
	// KeyFile is the companion's private key (default locations.RelayKeyFile()).
	// An existing key is reused, so pairing again changes nothing on disk.
	KeyFile string
	// Recorder keeps the paired second PC (required).
	Recorder Recorder
	// AuthorizedKeysFile replaces the POSIX default ~/.ssh/authorized_keys on
	// the second PC (a server whose AuthorizedKeysFile points elsewhere;
	// tests). Relative paths are from the remote user's home.
	AuthorizedKeysFile string
	// ForcedCommand, when set, pins the key to that one command on the
	// second PC (command="..."); see docs/second-pc.md for the trade-off.
	ForcedCommand string
	// Comment names our line in authorized_keys; default
	// "strata-companion@<this PC's host name>".
	Comment string
	// Timeout bounds each dial (default sshx.DefaultTimeout).
	Timeout time.Duration
	// Progress, when set, is told each step in words.
	Progress func(step string)
	// AgentBinary, when set, returns a strata-vision-relay build for the
	// second PC's OS and architecture (as prepare.Options.AgentBinary).
	// On a Windows second PC it is copied over sftp into RemoteDir and
	// installs the key itself (ACLs by golang.org/x/sys/windows); without
	// it a PowerShell script does (see docs/second-pc.md).
	AgentBinary func(goos, goarch string) (string, error)
	// RemoteDir is where the agent goes (default prepare.DefaultRemoteDir,
	// where prepare puts it too, so prepare finds it up to date).
	RemoteDir string
	// By default the companion's key is pinned to the agent (agent-only):
	// pairing copies the agent (AgentBinary) into RemoteDir with the user's
	// own login, and the line forces `<agent> gate` (agent.Gate), which runs
	// only the agent on files in its own folder, its version, the stop of a
	// hung agent and its own unpair. Probes and anything else then need the
	// user's own login.
	//
	// ShellKey opts out (an expert's choice, weaker): the line is
	// `restrict` only, and the key holds a shell under the user's account.
	ShellKey bool
	// AllowInstall are the sha256 sums of the programs (strata-vision and
	// its libraries) prepare may install through an agent-only key, beside
	// LocalEncoder's.
	AllowInstall []string
	// LocalEncoder is this PC's strata-vision (the one prepare copies):
	// when the second PC has this PC's OS and architecture, its sum and its
	// libraries' (prepare.InstallSums) are pinned too.
	LocalEncoder string
	// Encoder is a strata-vision already on the second PC outside the
	// agent's folder (an absolute path there, e.g. a Strata engine
	// installed on it): the gate allows it as the agent's --encoder.
	Encoder string
	// From, when set, limits the key to logins from these addresses
	// (authorized_keys from="..."): the server's address as the second PC
	// sees it, where it is known to stay.
	From string
}

// agentOnly: the key forces the agent's gate (the default).
func (o *Options) agentOnly() bool { return !o.ShellKey && o.ForcedCommand == "" }

// Recorder keeps what pairing did. internal/secondpc has the
// implementations (over the settings file, in memory for the wizard).
type Recorder interface {
	// RecordPairing stores the second PC just paired: host, port, user,
	// key file, host key, OS, arch and MAC. Pairing the same PC again keeps
	// what prepare found.
	RecordPairing(ctx context.Context, r settings.Remote) error
	// RecordUnpair forgets the second PC.
	RecordUnpair(ctx context.Context) error
}

// Result says what Pair did.
type Result struct {
	Remote     settings.Remote
	KeyCreated bool   // a new key was made (false: the existing one was reused)
	Installed  string // the authorized_keys file written on the second PC
	Line       string // the line installed there
	OS, Arch   string // the second PC's
	// Allowed are the program sums pinned in an agent-only key (--allow).
	Allowed []string
}

// GateCommand is the forced command of an agent-only key: the agent in
// agentDir as `gate`, with what pairing pins (agent.Gate reads them).
func GateCommand(goos, agentDir string, allow []string, encoder, keys string) []string {
	return agentcmd.Command{Program: remote.RemoteJoin(goos, agentDir, remote.AgentName(goos)), Verb: agentcmd.VerbGate,
		Gate: agentcmd.Gate{Allow: allow, Encoder: encoder, Keys: keys}}.Argv(goos)
}

// CommentPrefix starts the name of every authorized_keys line the
// companion writes.
const CommentPrefix = "strata-companion@"

// DefaultComment names the companion's authorized_keys lines.
func DefaultComment() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "this-pc"
	}
	return CommentPrefix + safeComment.ReplaceAllString(h, "-")
}

var safeComment = regexp.MustCompile(`[^A-Za-z0-9@._-]`)

func (o *Options) defaults() error {
	if o.KeyFile == "" {
		o.KeyFile = locations.RelayKeyFile()
	}
	if o.Recorder == nil {
		return errors.New("pairing.Options.Recorder is nil: nothing would record the second PC")
	}
	if o.KnownHosts == nil {
		o.KnownHosts = &sshx.KnownHosts{}
	}
	if o.KnownHosts.File == "" {
		o.KnownHosts.File = locations.KnownHostsFile()
	}
	if o.Comment == "" {
		o.Comment = DefaultComment()
	}
	if safeComment.MatchString(o.Comment) {
		return fmt.Errorf("the key comment %q may hold only letters, digits and @ . _ -", o.Comment)
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if strings.ContainsAny(o.ForcedCommand, "\"\n\r") {
		return errors.New("the forced command may not contain double quotes or line breaks")
	}
	if o.ShellKey && o.ForcedCommand != "" {
		return errors.New("a forced command and a shell key exclude each other: choose one")
	}
	if o.agentOnly() && o.AgentBinary == nil {
		return errors.New("an agent-only key needs the agent build to copy to the second PC (AgentBinary); a shell key (ShellKey) does not")
	}
	if !o.agentOnly() && (o.Encoder != "" || len(o.AllowInstall) > 0) {
		return errors.New("an encoder to allow goes with an agent-only key, not with a shell key or a forced command")
	}
	if err := CheckGatePins(o.AllowInstall, o.Encoder); err != nil {
		return err
	}
	if strings.Trim(o.From, "0123456789abcdefABCDEF.:/,*?") != "" {
		return fmt.Errorf("from %q is not a list of addresses", o.From)
	}
	return nil
}

// Pair does the whole pairing. On an unknown host key it returns the
// *sshx.HostKeyError (with the fingerprint) and changes nothing: ask the
// user, set KnownHosts.Accept and call again.
func Pair(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	ep := o.Endpoint
	o.Progress("connecting to " + ep.String() + " with your own credentials")
	c, err := sshx.Dial(ctx, sshx.Config{Endpoint: ep, Auth: o.Auth, Password: o.Password,
		HostKeyCallback: o.KnownHosts.Callback, HostKeyAlgorithms: o.KnownHosts.Algorithms(ep), Timeout: o.Timeout})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	hostKey := o.KnownHosts.Presented()

	goos, arch, shell, err := linkprobe.System(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ep, err)
	}

	signer, created, err := loadOrCreateKey(o.KeyFile, o.Comment)
	if err != nil {
		return nil, err
	}
	res := &Result{KeyCreated: created, OS: goos, Arch: arch}
	forced, agentDir := o.ForcedCommand, ""
	inst := installer(shell, arch, o.AgentBinary, o.RemoteDir)
	if o.agentOnly() {
		o.Progress("copying the companion's agent to " + ep.String())
		bin, err := o.AgentBinary(goos, arch)
		if err != nil {
			return nil, err
		}
		dir := o.RemoteDir
		if dir == "" {
			dir = prepare.DefaultRemoteDir
		}
		if agentDir, err = prepare.InstallAgent(ctx, c, goos, dir, bin); err != nil {
			return nil, fmt.Errorf("copying the companion's agent to %s: %w", ep, err)
		}
		allow := append([]string(nil), o.AllowInstall...)
		if o.LocalEncoder != "" && goos == runtime.GOOS && arch == runtime.GOARCH {
			sums, err := prepare.InstallSums(o.LocalEncoder)
			if err != nil {
				return nil, fmt.Errorf("this PC's encoder %s, to allow on the second PC: %w", o.LocalEncoder, err)
			}
			allow = append(allow, sums...)
		}
		if o.Encoder != "" && !remotecmd.IsAbs(goos, o.Encoder) {
			return nil, fmt.Errorf("the encoder %s is not an absolute path on a %s PC", o.Encoder, goos)
		}
		keys, err := inst.path(ctx, c, o.AuthorizedKeysFile)
		if err != nil {
			return nil, fmt.Errorf("finding the authorized_keys file on %s: %w", ep, err)
		}
		gate := GateCommand(goos, agentDir, allow, o.Encoder, keys)
		if forced, err = remotecmd.Quote(goos, gate); err != nil {
			return nil, err
		}
		res.Allowed = allow
	}
	res.Line = authorizedLine(signer.PublicKey(), o.Comment, forced, o.From)

	o.Progress("installing the companion's key on " + ep.String())
	res.Installed, err = inst.install(ctx, c, res.Line, o.Comment, o.AuthorizedKeysFile)
	if err != nil {
		if created {
			os.Remove(o.KeyFile)
		}
		return nil, fmt.Errorf("installing the companion's key on %s: %w", ep, err)
	}

	o.Progress("checking that the companion's key logs in on its own")
	if err := prove(ctx, ep, signer, hostKey, o.Timeout, o.ForcedCommand != "", agentDir, goos); err != nil {
		// Leave nothing half-done behind: take our line out again.
		inst.remove(ctx, c, signer.PublicKey(), o.Comment, o.AuthorizedKeysFile)
		if created {
			os.Remove(o.KeyFile)
		}
		return nil, fmt.Errorf("the key was installed in %s on %s, but logging in with it failed (%v); "+
			"the second PC's ssh server may read keys from another file (its AuthorizedKeysFile setting) or refuse "+
			"this file's permissions (StrictModes); the key was removed again", res.Installed, ep, err)
	}

	o.Progress("finding the network card's address (for Wake-on-LAN)")
	mac := RemoteMAC(ctx, c, shell)

	o.Progress("pinning the host key and saving the settings")
	if err := sshx.Pin(o.KnownHosts.File, ep, hostKey); err != nil {
		return nil, err
	}
	r := settings.Remote{Host: ep.Host, Port: ep.Port, User: ep.User, KeyFile: o.KeyFile,
		HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostKey))), OS: goos, Arch: arch, MAC: mac, RemoteDir: agentDir}
	if err := o.Recorder.RecordPairing(ctx, r); err != nil {
		return nil, err
	}
	res.Remote = r
	return res, nil
}

// CheckGatePins checks what an agent-only key's gate pins: sha256 sums of
// the encoder builds prepare may install, and an absolute encoder path.
func CheckGatePins(allow []string, encoder string) error {
	if encoder != "" {
		if err := remotecmd.CheckPath("encoder", encoder); err != nil {
			return err
		}
		if !remotecmd.IsAbs("linux", encoder) && !remotecmd.IsAbs("windows", encoder) {
			return fmt.Errorf("the encoder on the second PC %q must be an absolute path there (one in the agent's folder needs no pin)", encoder)
		}
	}
	for _, sum := range allow {
		if len(sum) != 64 || strings.Trim(strings.ToLower(sum), "0123456789abcdef") != "" {
			return fmt.Errorf("%q is not a sha256 sum", sum)
		}
	}
	return nil
}

// SafeComment: comment may name our authorized_keys lines.
func SafeComment(comment string) bool { return comment != "" && !safeComment.MatchString(comment) }

// AuthorizedLine is authorizedLine for the lender, which installs the line
// itself.
func AuthorizedLine(pub ssh.PublicKey, comment, forced, from string) string {
	return authorizedLine(pub, comment, forced, from)
}

// authorizedLine is our authorized_keys line: "restrict" turns off port,
// agent and X11 forwarding, the pty and ~/.ssh/rc, all of which the relay
// never needs; command= forces one command (sshd's option syntax escapes a
// double quote as \"), from= limits where the key may log in from.
func authorizedLine(pub ssh.PublicKey, comment, forced, from string) string {
	opts := "restrict"
	if forced != "" {
		opts += `,command="` + strings.ReplaceAll(forced, `"`, `\"`) + `"`
	}
	if from != "" {
		opts += `,from="` + from + `"`
	}
	return opts + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " " + comment
}

// prove logs in with the companion's key alone, as the relay will.
func prove(ctx context.Context, ep sshx.Endpoint, signer ssh.Signer, hostKey ssh.PublicKey, timeout time.Duration, forced bool, agentDir, goos string) error {
	c, err := sshx.Dial(ctx, sshx.Config{Endpoint: ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), HostKeyAlgorithms: sshx.HostKeyAlgorithms(hostKey), Timeout: timeout})
	if err != nil {
		return err
	}
	defer c.Close()
	if forced {
		return nil // the login itself is the proof; the command is not ours to run
	}
	sess, err := c.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	if agentDir != "" {
		// The gate runs the agent's version, and nothing else.
		cmd, err := agentcmd.Command{Program: remote.RemoteJoin(goos, agentDir, remote.AgentName(goos)), Verb: agentcmd.VerbVersion}.Quote(goos)
		if err != nil {
			return err
		}
		out, err := sess.CombinedOutput(cmd)
		if err != nil || !strings.Contains(string(out), "strata-vision-relay") {
			return fmt.Errorf("the agent did not answer through the new key (%v: %q)", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	// echo is a command in sh, cmd.exe and PowerShell alike.
	out, err := sess.CombinedOutput("echo strata-paired")
	if err != nil || !strings.Contains(string(out), "strata-paired") {
		return fmt.Errorf("a command run with the new key did not answer (%v: %q)", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// loadOrCreateKey reuses the key at path or makes a new ed25519 one there:
// 0600 in a 0700 folder (on Windows the installer gives the secrets folder
// an ACL for administrators and SYSTEM only).
func loadOrCreateKey(path, comment string) (ssh.Signer, bool, error) {
	if _, err := os.Stat(path); err == nil {
		s, err := sshx.LoadSigner(path, nil)
		if err != nil {
			return nil, false, fmt.Errorf("the companion's key %s exists but cannot be used (%v); delete it and pair again", path, err)
		}
		return s, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	dir := filepath.Dir(path)
	if dir == locations.Path(locations.SecretsDir) {
		// The settings folder above it first, readable by all (the tray and
		// the wizard read the settings): MkdirAll would make it 0700 too.
		if _, err := locations.EnsureDir(locations.ConfigDir); err != nil {
			return nil, false, fmt.Errorf("creating the settings folder: %w", err)
		}
		if _, err := locations.EnsureDir(locations.SecretsDir); err != nil {
			return nil, false, fmt.Errorf("creating the secrets folder %s: %w", dir, err)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("creating %s: %w", dir, err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, err
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, false, err
	}
	if err := atomicfile.Write(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, false, fmt.Errorf("saving the companion's key: %w", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	return s, true, err
}

// UnpairOptions for Unpair.
type UnpairOptions struct {
	// Remote is the paired second PC, as the settings hold it.
	Remote *settings.Remote
	// Recorder forgets it once removed (required).
	Recorder   Recorder
	KnownHosts string // default locations.KnownHostsFile()
	// Auth and Password are the user's own credentials, tried when the
	// companion's own key no longer logs in.
	Auth     []ssh.AuthMethod
	Password func() (string, error)
	// AuthorizedKeysFile as in Options.
	AuthorizedKeysFile string
	Comment            string
	Timeout            time.Duration
	// Force removes the local key, pin and settings even when the second PC
	// cannot be reached (its line then stays there; the message says so).
	Force    bool
	Progress func(step string)
	// AgentBinary as in Options (Windows: the agent removes the line).
	AgentBinary func(goos, goarch string) (string, error)
}

// ErrNotPaired says the settings hold no second PC.
var ErrNotPaired = errors.New("no second PC is paired (the companion settings hold none)")

// Unpair removes our authorized_keys line from the second PC (only ours:
// matched by the key, or by our comment), then the local key, the pin and the
// second PC in the settings. It returns the second PC it unpaired.
func Unpair(ctx context.Context, o UnpairOptions) (*settings.Remote, error) {
	if o.Recorder == nil {
		return nil, errors.New("pairing.UnpairOptions.Recorder is nil: nothing would forget the second PC")
	}
	if o.KnownHosts == "" {
		o.KnownHosts = locations.KnownHostsFile()
	}
	if o.Comment == "" {
		o.Comment = DefaultComment()
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Remote == nil || o.Remote.Host == "" {
		return nil, ErrNotPaired
	}
	r := *o.Remote
	ep := sshx.Endpoint{User: r.User, Host: r.Host, Port: r.Port}

	remoteErr := removeRemote(ctx, o, r, ep)
	if remoteErr != nil && !o.Force {
		return nil, fmt.Errorf("could not remove the companion's key from %s: %w; nothing was changed here "+
			"(to forget that PC anyway, unpair with --force and remove the line ending in %q from its authorized_keys yourself)",
			ep, remoteErr, o.Comment)
	}

	o.Progress("removing the local key, the host key pin and the settings")
	var errs []error
	if r.KeyFile != "" {
		for _, f := range []string{r.KeyFile, r.KeyFile + ".pub"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := sshx.Unpin(o.KnownHosts, ep); err != nil {
		errs = append(errs, err)
	}
	if err := o.Recorder.RecordUnpair(ctx); err != nil {
		errs = append(errs, err)
	}
	if remoteErr != nil {
		errs = append(errs, fmt.Errorf("the key's line is still in authorized_keys on %s (%v): remove the line ending in %q there", ep, remoteErr, o.Comment))
	}
	return &r, errors.Join(errs...)
}

// unpairThroughGate runs `<agent> unpair` with the companion's key: an
// agent-only key's gate removes the lines that force it from the
// authorized_keys file pinned at pairing. With a shell key the agent
// refuses (it removes nothing) and the caller edits the file itself.
func unpairThroughGate(ctx context.Context, c *ssh.Client, r settings.Remote) error {
	if r.RemoteDir == "" || r.OS == "" {
		return errors.New("no agent folder recorded")
	}
	cmd, err := agentcmd.Command{Program: remote.RemoteJoin(r.OS, r.RemoteDir, remote.AgentName(r.OS)), Verb: agentcmd.VerbUnpair}.Quote(r.OS)
	if err != nil {
		return err
	}
	_, err = run(ctx, c, cmd)
	return err
}

func removeRemote(ctx context.Context, o UnpairOptions, r settings.Remote, ep sshx.Endpoint) error {
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey))
	if err != nil {
		return fmt.Errorf("the pinned host key in the settings is unreadable (%v)", err)
	}
	dial := func(auth []ssh.AuthMethod, password func() (string, error)) (*ssh.Client, error) {
		return sshx.Dial(ctx, sshx.Config{Endpoint: ep, Auth: auth, Password: password,
			HostKeyCallback: ssh.FixedHostKey(hostKey), HostKeyAlgorithms: sshx.HostKeyAlgorithms(hostKey), Timeout: o.Timeout})
	}
	o.Progress("connecting to " + ep.String())
	// The companion's own key first (no password needed); x/crypto tries
	// only one publickey method per login, so the user's credentials get a
	// login of their own when that one is refused (a forced command, a lost
	// key).
	var pub ssh.PublicKey
	var c *ssh.Client
	var shell, arch string
	if s, lerr := sshx.LoadSigner(r.KeyFile, nil); lerr == nil {
		pub = s.PublicKey()
		if c, err = dial([]ssh.AuthMethod{ssh.PublicKeys(s)}, nil); err == nil {
			// An agent-only key removes its own line through its gate.
			if gerr := unpairThroughGate(ctx, c, r); gerr == nil {
				c.Close()
				return nil
			} else {
				o.Progress("the agent did not remove the key (" + gerr.Error() + "); trying a shell")
			}
			if _, arch, shell, err = linkprobe.System(ctx, c); err != nil {
				c.Close()
				c = nil
			}
		}
	} else {
		err = lerr
	}
	if c == nil {
		if len(o.Auth) == 0 && o.Password == nil {
			return err
		}
		if c, err = dial(o.Auth, o.Password); err != nil {
			return err
		}
		if _, arch, shell, err = linkprobe.System(ctx, c); err != nil {
			c.Close()
			return err
		}
	}
	defer c.Close()
	o.Progress("removing the companion's key from " + ep.String())
	return installer(shell, arch, o.AgentBinary, r.RemoteDir).remove(ctx, c, pub, o.Comment, o.AuthorizedKeysFile)
}
