package lender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// DefaultPairPort is the TCP port of the pairing exchange.
const DefaultPairPort = lend.DefaultPairPort

// Options for Setup and Serve.
type Options struct {
	User     string        // the lending account (default: the one that ran lend; under sudo, SUDO_USER)
	Name     string        // this PC's name on the network (default: its host name)
	SSHPort  int           // default 22
	PairPort int           // default DefaultPairPort
	Valid    time.Duration // a code's life (default lend.DefaultValid)
	// AgentBinary is the strata-vision-relay build to install (default:
	// the one beside this program).
	AgentBinary string
	// Run runs an outside step (default: exec, output kept for errors).
	Run func(ctx context.Context, argv []string) ([]byte, error)
	// Progress hears each step done, in words.
	Progress func(string)
	// GPUs are this PC's, for the announcement.
	GPUs []lend.GPU
	// Announce puts the lender on the network (lend.Announce); nil: not
	// announced (the address typed by hand still pairs).
	Announce func(ctx context.Context, a lend.Announcement) (func(), error)
	// Version is the agent's version, announced.
	Version string
}

func (o *Options) defaults() error {
	if o.User == "" {
		o.User = os.Getenv("SUDO_USER")
	}
	if o.User == "" {
		a, err := account.Current()
		if err != nil {
			return err
		}
		o.User = a.Name
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
	}
	if o.SSHPort == 0 {
		o.SSHPort = 22
	}
	if o.PairPort == 0 {
		o.PairPort = DefaultPairPort
	}
	if o.Valid <= 0 {
		o.Valid = lend.DefaultValid
	}
	if o.Run == nil {
		o.Run = func(ctx context.Context, argv []string) ([]byte, error) {
			return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		}
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return nil
}

// Setup makes this PC ready to lend (idempotent): the ssh server, the
// agent, a fresh code. It records every change before making the next.
func Setup(ctx context.Context, o Options) (*Record, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if !account.Privileged() {
		return nil, errors.New("lending changes the ssh server and another account's files: run it as root (sudo strata-service lend), or on Windows from the installer or an administrator's window")
	}
	acct, err := account.Lookup(o.User)
	if err != nil {
		return nil, err
	}
	// Root never lends (its key would reach everything); on Windows the
	// account that lends is usually an administrator, and its key is still
	// forced to the agent's gate (docs/security.md).
	if acct.Privileged && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("the account %s is an administrator (or root): lend for a normal account (--user NAME), so the paired PC can run only that account's agent", acct.Name)
	}
	bin := o.AgentBinary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(filepath.Dir(exe), remote.AgentName(runtime.GOOS))
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the companion's agent (%s) is not beside this program: reinstall Strata Companion", remote.AgentName(runtime.GOOS))
	}

	err = Update(ctx, func(r *Record) error {
		if r.User != "" && r.User != acct.Name {
			return fmt.Errorf("this PC lends already for the account %s: run `strata-service lend stop` first", r.User)
		}
		r.User, r.Name, r.SSHPort, r.PairPort = acct.Name, o.Name, o.SSHPort, o.PairPort
		if r.Started.IsZero() {
			r.Started = time.Now().Truncate(time.Second)
		}
		if err := openSSH(ctx, o, r); err != nil {
			return err
		}
		o.Progress("installing the companion's agent for " + acct.Name)
		dir, err := installAgent(ctx, acct, bin)
		if err != nil {
			return err
		}
		r.AgentDir = dir
		keys, err := agentKeys(ctx, acct, dir, nil, "path")
		if err != nil {
			return fmt.Errorf("finding %s's authorized_keys file: %w", acct.Name, err)
		}
		r.KeysFile = strings.TrimSpace(keys)
		c, err := lend.NewCode()
		if err != nil {
			return err
		}
		r.Code = lend.State{Code: c, Expires: time.Now().Add(o.Valid).Truncate(time.Second), TriesLeft: lend.MaxTries}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return Load()
}

// sshAnswers: an ssh server greets on port at one of this PC's addresses.
func sshAnswers(port int) (string, bool) {
	for _, ip := range localAddrs(true) {
		addr := net.JoinHostPort(ip, fmt.Sprint(port))
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(3 * time.Second))
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		c.Close()
		if err == nil && string(b) == "SSH-" {
			return addr, true
		}
	}
	return "", false
}

// localAddrs are this PC's IPv4 addresses, loopback first when asked.
func localAddrs(loopback bool) []string {
	var out []string
	if loopback {
		out = append(out, "127.0.0.1")
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		as, _ := i.Addrs()
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				out = append(out, n.IP.String())
			}
		}
	}
	return out
}

// openSSH leaves an ssh server that answers exactly as it is; else it
// enables the OS's own (recorded, so stop undoes only that).
func openSSH(ctx context.Context, o Options, r *Record) error {
	if _, ok := sshAnswers(o.SSHPort); ok {
		if r.SSHServer == "" {
			r.SSHServer = "kept"
		}
		o.Progress(fmt.Sprintf("an ssh server answers on port %d: left as it is", o.SSHPort))
		return nil
	}
	if runtime.GOOS == "windows" {
		return openWindowsSSH(ctx, o, r)
	}
	var unit string
	for _, u := range linuxUnits {
		if out, err := o.Run(ctx, []string{"systemctl", "cat", u}); err == nil && len(out) > 0 {
			unit = u
			break
		}
	}
	if unit == "" {
		return fmt.Errorf("no ssh server answers on port %d and none is installed: install your distribution's OpenSSH server "+
			"(Debian, Ubuntu: sudo apt install openssh-server; Fedora: sudo dnf install openssh-server; Arch: sudo pacman -S openssh), then lend again", o.SSHPort)
	}
	for _, s := range linuxSSHSteps(unit) {
		o.Progress(s.Say)
		if out, err := o.Run(ctx, s.Argv); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s.Argv, " "), err, bytes.TrimSpace(out))
		}
	}
	r.SSHServer, r.SSHEnabled = unit, true
	return nil
}

func openWindowsSSH(ctx context.Context, o Options, r *Record) error {
	steps := windowsSSHSteps(o.SSHPort, o.PairPort)
	// An installed service answers with its state (wine's sc.exe exits 0
	// for any name, so the words decide, not the exit code alone).
	installed := func() bool {
		out, err := o.Run(ctx, []string{"sc.exe", "query", "sshd"})
		return err == nil && strings.Contains(string(out), "STATE")
	}
	if !installed() {
		o.Progress(steps[0].Say)
		out, err := o.Run(ctx, steps[0].Argv)
		if err == nil && !installed() {
			err = errors.New("the sshd service is still missing afterwards")
		}
		if err != nil {
			return capabilityError(out, err)
		}
		r.Installed = true
	}
	for _, s := range steps[1:] {
		o.Progress(s.Say)
		if out, err := o.Run(ctx, s.Argv); err != nil {
			return fmt.Errorf("Windows refused to %s (%s: %v %s); nothing after it was done: do it by hand (Services: OpenSSH SSH Server; "+
				"Windows Defender Firewall: allow TCP ports %d and %d on Private networks), then lend again",
				s.Say, strings.Join(s.Argv, " "), err, bytes.TrimSpace(out), o.SSHPort, o.PairPort)
		}
	}
	r.SSHServer, r.SSHEnabled, r.FirewallRule = "sshd", true, FirewallRuleName
	return nil
}

// capabilityError words Windows' refusals to add OpenSSH Server.
func capabilityError(out []byte, err error) error {
	s := string(out)
	switch {
	case strings.Contains(s, "0x800f0954"):
		return errors.New("Windows could not install OpenSSH Server: this PC gets its features from a company update server (WSUS). Ask its administrator, or install it in Settings > System > Optional features, then lend again")
	case strings.Contains(s, "0x800f0950") || strings.Contains(s, "0x8024402c") || strings.Contains(s, "0x80072ee"):
		return errors.New("Windows could not download OpenSSH Server: this PC seems offline. Connect it to the internet (or install it in Settings > System > Optional features), then lend again")
	case strings.Contains(s, "Add-WindowsCapability") && strings.Contains(s, "not recognized"):
		return errors.New("this Windows is older than version 1809 and has no OpenSSH Server feature: update Windows, then lend again")
	}
	return fmt.Errorf("Windows could not install OpenSSH Server (%v): install it in Settings > System > Optional features, then lend again; %s", err, strings.TrimSpace(s))
}

// installAgent copies the agent into the account's strata-companion folder,
// as that account (the folder is made by it; the file written beside the
// target and never through a link, by asowner).
func installAgent(ctx context.Context, a *account.Account, bin string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(a.Home, "strata-companion")
	if runtime.GOOS != "windows" {
		if out, err := asowner.Command(ctx, a, "/", nil, "mkdir", "-p", "-m", "700", dir).CombinedOutput(); err != nil {
			return "", fmt.Errorf("making %s as %s: %v: %s", dir, a.Name, err, bytes.TrimSpace(out))
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := asowner.WriteFile(filepath.Join(dir, remote.AgentName(runtime.GOOS)), data, 0o755, a, nil); err != nil {
		return "", fmt.Errorf("installing the agent in %s: %w", dir, err)
	}
	return dir, nil
}

// agentKeys runs the installed agent's authorized-keys verb as the account
// (its own file, its own rights).
func agentKeys(ctx context.Context, a *account.Account, dir string, stdin []byte, args ...string) (string, error) {
	exe := filepath.Join(dir, remote.AgentName(runtime.GOOS))
	acct := a
	if cur, err := account.Current(); err == nil && cur.Name == a.Name {
		acct = nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := asowner.Command(ctx, acct, dir, nil, exe, append([]string{"authorized-keys"}, args...)...)
	defer asowner.Release(cmd)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// grant is the lender's work for a request the code proved: the key
// authorized for the agent's gate only, and what the PC must pin.
func grant(ctx context.Context, r *Record, local net.Addr, req lend.Request) (*lend.Grant, error) {
	pub, err := checkRequest(req)
	if err != nil {
		return nil, err
	}
	acct, err := account.Lookup(r.User)
	if err != nil {
		return nil, err
	}
	ip := "127.0.0.1"
	if ta, ok := local.(*net.TCPAddr); ok && !ta.IP.IsUnspecified() {
		ip = ta.IP.String()
	}
	hk, err := pairing.PresentedKey(ctx, net.JoinHostPort(ip, fmt.Sprint(r.SSHPort)), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("this PC's ssh server does not answer on port %d (%v)", r.SSHPort, err)
	}
	goos := runtime.GOOS
	if req.Encoder != "" && !remotecmd.IsAbs(goos, req.Encoder) {
		return nil, fmt.Errorf("the encoder %s is not an absolute path on a %s PC", req.Encoder, goos)
	}
	gate := pairing.GateCommand(goos, r.AgentDir, req.Allow, req.Encoder, r.KeysFile)
	forced, err := remote.QuoteCommand(goos, gate)
	if err != nil {
		return nil, err
	}
	line := pairing.AuthorizedLine(pub, req.Comment, forced, "")
	if _, err := agentKeys(ctx, acct, r.AgentDir, []byte(line+"\n"), "add", "--comment", req.Comment, "--line", "-", "--file", r.KeysFile); err != nil {
		return nil, fmt.Errorf("authorizing the key in %s: %w", r.KeysFile, err)
	}
	blob := strings.Fields(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))[1]
	err = Update(ctx, func(rec *Record) error {
		kept := rec.Paired[:0]
		for _, p := range rec.Paired {
			if p.Comment != req.Comment {
				kept = append(kept, p)
			}
		}
		rec.Paired = append(kept, Paired{Comment: req.Comment, Key: blob, From: req.From, When: time.Now().Truncate(time.Second)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &lend.Grant{Name: r.Name, HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk))), User: r.User, Port: r.SSHPort,
		OS: goos, Arch: runtime.GOARCH, AgentDir: r.AgentDir, KeysFile: r.KeysFile, MAC: macOf(ip)}, nil
}

// checkRequest is what a request proved by the code may ask for: one
// public key, a line name of the companion's own (so it can replace or
// remove no line of the account's: `authorized-keys add` replaces the
// lines of that name), and gate pins of the usual form.
func checkRequest(req lend.Request) (ssh.PublicKey, error) {
	pub, _, opts, rest, err := ssh.ParseAuthorizedKey([]byte(req.PublicKey))
	if err != nil || len(rest) > 0 || len(opts) > 0 {
		return nil, fmt.Errorf("the other PC's key is unreadable (%v)", err)
	}
	if !pairing.SafeComment(req.Comment) || !strings.HasPrefix(req.Comment, pairing.CommentPrefix) {
		return nil, fmt.Errorf("the key's name %q must start with %s and hold only letters, digits and @ . _ -", req.Comment, pairing.CommentPrefix)
	}
	if err := pairing.CheckGatePins(req.Allow, req.Encoder); err != nil {
		return nil, err
	}
	if len(req.From) > 255 || strings.ContainsAny(req.From, "\r\n") {
		return nil, errors.New("the other PC's name is not one line of at most 255 bytes")
	}
	return pub, nil
}

// macOf is the hardware address of the card holding ip (for Wake-on-LAN).
func macOf(ip string) string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		as, _ := i.Addrs()
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip && len(i.HardwareAddr) == 6 {
				return i.HardwareAddr.String()
			}
		}
	}
	return ""
}
