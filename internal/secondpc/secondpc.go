// Package secondpc is the one copy of the second-PC logic that the CLI
// (`strata-service probe --ssh`, `remote pair|unpair|prepare`) and the
// wizard (internal/setupflow/live) both call: the endpoint
// ([user@]host[:port] completed from ~/.ssh/config), the user's credentials
// (agent, key files, a password callback), logging in with the host-key
// question, probe, pair and unpair, the prepare options taken from Strata's
// config, and where the agent binary for the second PC's OS and architecture
// is. What it learns goes into the settings through one Recorder, so the
// owner of the settings (the service's backend) can implement it; the
// programs only ask questions and print answers.
package secondpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/sshx"
)

// Endpoint parses target ([user@]host[:port]) and completes it from the
// ssh config files (nil: the user's ~/.ssh/config and the system one).
// defaultUser fills a user the target and the config leave out ("" lets
// sshx.Resolve use the local user name, as ssh does).
func Endpoint(target, defaultUser string, sshConfigFiles []string) (sshx.Endpoint, sshx.HostConfig, error) {
	ep, err := sshx.ParseEndpoint(target)
	if err != nil {
		return ep, sshx.HostConfig{}, err
	}
	if ep.User == "" {
		ep.User = defaultUser
	}
	if sshConfigFiles == nil {
		sshConfigFiles = sshx.UserSSHConfigFiles()
	}
	return sshx.Resolve(ep, sshConfigFiles...)
}

// Suggestion is one concrete Host entry of the ssh config.
type Suggestion struct {
	Alias, HostName, User string
	Port                  int
}

// Suggestions lists the concrete Host entries (no wildcards) of the ssh
// config files (nil: the user's), for a person to pick from.
func Suggestions(sshConfigFiles []string) []Suggestion {
	if sshConfigFiles == nil {
		sshConfigFiles = sshx.UserSSHConfigFiles()
	}
	var out []Suggestion
	seen := map[string]bool{}
	for _, path := range sshConfigFiles {
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
				s := Suggestion{Alias: alias}
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

// Credentials are the user's own ways in, used for one login and never kept.
type Credentials struct {
	// IdentityFiles the user named (a flag, the wizard's tests): each must
	// load. When nil, the host's IdentityFile lines of the ssh config, else
	// ~/.ssh/id_*, are tried where usable (an encrypted key only when
	// Passphrase can ask).
	IdentityFiles []string
	// NoDefaultKeys skips the config's and the default key files.
	NoDefaultKeys bool
	// NoAgent skips the ssh-agent.
	NoAgent bool
	// Passphrase asks for an encrypted key's passphrase (nil: such keys are skipped).
	Passphrase sshx.Passphrase
	// Password answers a password or keyboard-interactive prompt (nil: none).
	Password func() (string, error)
	// ExtraKeys are offered too when they exist (the companion's own key
	// when probing the paired PC).
	ExtraKeys []string
	// NoWayHint ends the error when there is no way to sign in at all (what
	// the program lets the user do about it).
	NoWayHint string
}

// Methods builds the auth methods for ep (hc is its ssh-config entry).
// Call closeFn once the login is over.
func (c Credentials) Methods(ep sshx.Endpoint, hc sshx.HostConfig) (auth []ssh.AuthMethod, password func() (string, error), closeFn func(), err error) {
	ua := sshx.UserAuth{NoAgent: c.NoAgent, Passphrase: c.Passphrase}
	switch {
	case c.IdentityFiles != nil:
		ua.IdentityFiles = append(ua.IdentityFiles, c.IdentityFiles...)
	case !c.NoDefaultKeys:
		files := Existing(hc.IdentityFiles)
		if len(hc.IdentityFiles) == 0 {
			files = Existing(sshx.DefaultIdentityFiles())
		}
		for _, f := range files {
			_, err := sshx.LoadSigner(f, nil)
			if err == nil || (errors.Is(err, sshx.ErrPassphraseNeeded) && ua.Passphrase != nil) {
				ua.IdentityFiles = append(ua.IdentityFiles, f)
			}
		}
	}
	ua.IdentityFiles = append(ua.IdentityFiles, Existing(c.ExtraKeys)...)
	auth, closeFn, err = ua.Methods()
	if err != nil {
		return nil, nil, func() {}, err
	}
	return auth, c.Password, closeFn, nil
}

// explain adds, to a refused login, that the user gave no credentials and
// what to do about it. The login is still tried without any (the host key
// and reachability are worth knowing), so the error keeps its kind.
func (c Credentials) explain(err error, auth []ssh.AuthMethod) error {
	if err == nil || len(auth) > 0 || c.Password != nil || sshx.Classify(err) != sshx.ReasonAuthFailed {
		return err
	}
	msg := "no ssh agent, no usable key file and no password were there to sign in with"
	if c.NoWayHint != "" {
		msg += ": " + c.NoWayHint
	}
	return fmt.Errorf("%w (%s)", err, msg)
}

// Existing keeps the files that exist.
func Existing(files []string) []string {
	var out []string
	for _, f := range files {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// ConfirmHostKey asks a person whether to trust an unknown host key (never
// called for a changed one: that is a hard stop). nil: never trust.
type ConfirmHostKey func(ctx context.Context, hk *sshx.HostKeyError) bool

// ErrHostKeyRejected says the person did not trust the host key.
var ErrHostKeyRejected = errors.New("the second PC's host key was not trusted")

// withHostKeyQuestion runs try; when it fails on an unknown host key and
// confirm says yes, it accepts that fingerprint in kh and runs try once more.
// With confirm nil the HostKeyError itself is returned (a program can then
// tell how to accept it); with confirm saying no, ErrHostKeyRejected wrapping it.
func withHostKeyQuestion(ctx context.Context, kh *sshx.KnownHosts, confirm ConfirmHostKey, try func() error) error {
	err := try()
	var hk *sshx.HostKeyError
	if err == nil || !errors.As(err, &hk) || hk.Changed() || hk.Rejected != "" || confirm == nil {
		return err
	}
	if !confirm(ctx, hk) {
		return fmt.Errorf("%w: %w", ErrHostKeyRejected, err)
	}
	kh.Accept = hk.Fingerprint
	return try()
}

// Login is how to reach the second PC with the user's credentials.
type Login struct {
	Endpoint   sshx.Endpoint
	HostConfig sshx.HostConfig
	Creds      Credentials
	// KnownHosts checks the host key; its Accept may carry a fingerprint
	// the user gave beforehand (--accept-host-key).
	KnownHosts *sshx.KnownHosts
	// Confirm asks about an unknown host key.
	Confirm ConfirmHostKey
	// Timeout bounds the connection and handshake (0: sshx's default).
	Timeout time.Duration
}

// Dial logs in, asking about an unknown host key through Confirm.
func (l *Login) Dial(ctx context.Context) (*ssh.Client, error) {
	auth, password, closeFn, err := l.Creds.Methods(l.Endpoint, l.HostConfig)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	kh := l.KnownHosts
	cfg := sshx.Config{Endpoint: l.Endpoint, Auth: auth, Password: password, HostKeyCallback: kh.Callback,
		HostKeyAlgorithms: kh.Algorithms(l.Endpoint), Timeout: l.Timeout}
	var c *ssh.Client
	err = withHostKeyQuestion(ctx, kh, l.Confirm, func() error {
		var err error
		c, err = sshx.Dial(ctx, cfg)
		return err
	})
	return c, l.Creds.explain(err, auth)
}
