package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// remoteCmd is the remote group: its subcommands are commands of their own
// (pair and unpair here, prepare in cmd_remote_prepare.go, idle-stop in
// cmd_remote_idle.go), each with its own flags.
func remoteCmd(env *cliEnv) *ffcli.Command {
	var subs []*ffcli.Command
	subs = append(subs, remotePairingCmds(env)...)
	subs = append(subs, remotePrepareCmd(env), remoteIdleStopCmd(env), remoteFindCmd(env))
	return &ffcli.Command{
		Name:        "remote",
		ShortHelp:   "find, pair, unpair or prepare the second PC that reads pictures, or set when its encoder stops (idle-stop)",
		ShortUsage:  "strata-service remote <subcommand> [arguments] [flags]",
		FlagSet:     env.flagSet("remote", nil),
		Subcommands: subs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) == 0 {
				return usageError{}
			}
			names := make([]string, len(subs))
			for i, s := range subs {
				names[i] = s.Name
			}
			return usageError{fmt.Errorf("unknown subcommand %q (one of: %s)", args[0], strings.Join(names, ", "))}
		},
	}
}

// sshLogin is how the CLI logs in to a second PC with the user's own
// credentials: flags, ~/.ssh/config prefill, prompts on a terminal.
type sshLogin struct {
	identity      string
	acceptHostKey string
	passwordStdin bool
	timeout       time.Duration
}

func (l *sshLogin) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&l.identity, "identity", "", "log in with this private key file (else: your ssh-agent, the IdentityFile of ~/.ssh/config, ~/.ssh/id_*)")
	fs.StringVar(&l.acceptHostKey, "accept-host-key", "", "trust the second PC's host key if its fingerprint is exactly this (SHA256:...), after checking it on that PC")
	fs.BoolVar(&l.passwordStdin, "password-stdin", false, "read your password on that PC from the first line of stdin (for scripts)")
	fs.DurationVar(&l.timeout, "connect-timeout", sshx.DefaultTimeout, "give up when the connection and ssh handshake take longer than this")
}

// login is the second-PC login these flags describe: the target completed
// from ~/.ssh/config, the user's credentials, and the terminal's question
// for an unknown host key. extraKeys (the companion's own key, when probing
// the paired PC) are offered too.
func (l *sshLogin) login(env *cliEnv, target string, extraKeys ...string) (*secondpc.Login, error) {
	ep, hc, err := secondpc.Endpoint(target, "", nil)
	if err != nil {
		return nil, err
	}
	return &secondpc.Login{Endpoint: ep, HostConfig: hc, Creds: l.credentials(env, ep, extraKeys...),
		KnownHosts: &sshx.KnownHosts{File: locations.KnownHostsFile(), Accept: l.acceptHostKey},
		Confirm:    terminalHostKeyQuestion(env), Timeout: l.timeout}, nil
}

// credentials are the user's: --identity (else ssh-agent, ~/.ssh/config,
// ~/.ssh/id_*), a password from --password-stdin or the terminal.
func (l *sshLogin) credentials(env *cliEnv, ep sshx.Endpoint, extraKeys ...string) secondpc.Credentials {
	c := secondpc.Credentials{Passphrase: terminalPassphrase(env), ExtraKeys: extraKeys,
		NoWayHint: "pass --identity FILE or --password-stdin, start ssh-agent, or run this in a terminal to type a password"}
	if l.identity != "" {
		c.IdentityFiles = []string{l.identity}
	}
	switch {
	case l.passwordStdin:
		var once sync.Once
		var pw string
		var perr error
		c.Password = func() (string, error) {
			once.Do(func() {
				line, err := bufio.NewReader(env.stdin).ReadString('\n')
				if err != nil && line == "" {
					perr = errors.New("--password-stdin: no password on stdin")
				}
				pw = strings.TrimRight(line, "\r\n")
			})
			return pw, perr
		}
	case isTerminal(env.stdin):
		c.Password = func() (string, error) {
			fmt.Fprintf(env.stderr, "Password for %s: ", ep)
			b, err := term.ReadPassword(int(env.stdin.(*os.File).Fd()))
			fmt.Fprintln(env.stderr)
			return string(b), err
		}
	}
	return c
}

// terminalHostKeyQuestion asks on a terminal whether to trust an unknown
// host key; elsewhere it is nil, and the error says how (--accept-host-key).
func terminalHostKeyQuestion(env *cliEnv) secondpc.ConfirmHostKey {
	if !isTerminal(env.stdin) {
		return nil
	}
	return func(_ context.Context, hk *sshx.HostKeyError) bool {
		fmt.Fprintf(env.stderr, "%s\nTrust this host key (%s)? Type yes to trust it: ", hk.Error(), hk.Fingerprint)
		line, _ := bufio.NewReader(env.stdin).ReadString('\n')
		return strings.TrimSpace(strings.ToLower(line)) == "yes"
	}
}

// hostKeyHint is what to add to an unknown-host error on the command line.
func hostKeyHint(err error) string {
	var hk *sshx.HostKeyError
	if errors.As(err, &hk) && !hk.Changed() && hk.Rejected == "" {
		return fmt.Sprintf("; if it matches, run again with --accept-host-key %s", hk.Fingerprint)
	}
	return ""
}

func terminalPassphrase(env *cliEnv) sshx.Passphrase {
	if !isTerminal(env.stdin) {
		return nil
	}
	return func(path string) ([]byte, error) {
		fmt.Fprintf(env.stderr, "Passphrase for %s: ", path)
		b, err := term.ReadPassword(int(env.stdin.(*os.File).Fd()))
		fmt.Fprintln(env.stderr)
		return b, err
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// agentBinaryUsage is --agent-binary's help on pair, unpair and prepare: a
// Windows second PC gets the companion's agent, which installs and removes
// the key there (and prepare runs it); by default the build for that PC's
// OS and architecture is found beside this program (docs/second-pc.md).
const agentBinaryUsage = "the strata-vision-relay build for the second PC (default: found beside this program, in <os>-<arch>/ or bin/<os>-<arch>/)"

// localEncoderOf is this PC's strata-vision build (the one prepare
// copies), from the install in use; "" when none is found.
func localEncoderOf(ctx context.Context, env *cliEnv) string {
	st, _ := settings.LoadDefault()
	if in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot, Config: env.configPath, Settings: st}); err == nil {
		if cfg, err := strataconfig.Read(in.ConfigInUse); err == nil {
			return secondpc.LocalEncoder(cfg)
		}
	}
	return ""
}

// remotePairingCmds are "remote pair" and "remote unpair".
func remotePairingCmds(env *cliEnv) []*ffcli.Command {
	var cmds []*ffcli.Command
	var (
		login         sshLogin
		forced        string
		authorizedKey string
		pairAgent     string
		agentOnly     bool
		shellKey      bool
		pairEncoder   string
		allowEncoder  string
		from          string
		pairDir       string
		pairCode      string
		findWait      time.Duration
	)
	cmds = append(cmds, &ffcli.Command{
		Name:       "pair",
		ShortHelp:  "give the companion its own key on the second PC: with the code it shows (lend), or your credentials once",
		ShortUsage: "strata-service remote pair [user@]host[:port] [flags], or with a lender's code: strata-service remote pair --code CODE NAME|HOST[:PORT]",
		FlagSet: env.flagSet("remote pair", func(fs *flag.FlagSet) {
			fs.StringVar(&pairCode, "code", "", "the pairing code the other PC shows (strata-service lend there): nothing else is asked; NAME is as remote find lists it, PORT the lender's pairing port (default 7390)")
			fs.DurationVar(&findWait, "wait", 3*time.Second, "with --code and a NAME: how long to look for it on the network")
			login.addFlags(fs)
			fs.StringVar(&forced, "forced-command", "", "pin the companion's key to this one command on the second PC (see docs/second-pc.md)")
			fs.StringVar(&authorizedKey, "authorized-keys", "", "install the key in this file on the second PC (when its sshd's AuthorizedKeysFile is not ~/.ssh/authorized_keys)")
			fs.StringVar(&pairAgent, "agent-binary", "", agentBinaryUsage)
			fs.BoolVar(&agentOnly, "agent-only", false, "the default (kept for scripts): the companion's key may run only its agent there (pictures, prepare's uploads, stopping a hung agent, the probe through the agent, its own unpair)")
			fs.BoolVar(&shellKey, "shell-key", false, "weaker, for experts: the key gets a shell on the second PC (restrict only, as before agent-only keys); new agent builds and any command then work with it alone (see docs/security.md)")
			fs.StringVar(&allowEncoder, "allow-encoder", "", "also allow another strata-vision build here for prepare to install there (its sha256 and its libraries' are pinned; this PC's own build from the Strata install is pinned by itself when the OS and architecture match)")
			fs.StringVar(&pairEncoder, "encoder", "", "allow strata-vision at this absolute path on the second PC (a Strata engine installed there; default: the one recorded, when pairing the same PC again)")
			fs.StringVar(&from, "from", "", "the key logs in only from this address (this PC's, as the second PC sees it)")
			fs.StringVar(&pairDir, "remote-dir", "", "the folder on the second PC for the agent (default strata-companion in the home folder)")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return &exitCode{code: 2, err: errors.New("usage: strata-service remote pair --code CODE NAME|HOST[:PORT], or remote pair [user@]host[:port]")}
			}
			if pairCode != "" {
				return pairWithCode(ctx, env, pairCode, args[0], findWait, login.timeout, allowEncoder)
			}
			l, err := login.login(env, args[0])
			if err != nil {
				return err
			}
			ep := l.Endpoint
			if shellKey && (agentOnly || forced != "" || allowEncoder != "" || pairEncoder != "") {
				return &exitCode{code: 2, err: errors.New("--shell-key gives the key a shell: it goes with none of --agent-only, --forced-command, --allow-encoder, --encoder")}
			}
			if forced != "" && (agentOnly || allowEncoder != "" || pairEncoder != "") {
				return &exitCode{code: 2, err: errors.New("--forced-command replaces the agent's gate: it goes with none of --agent-only, --allow-encoder, --encoder")}
			}
			keyAgentOnly := !shellKey && forced == ""
			var allow []string
			if allowEncoder != "" {
				if allow, err = prepare.InstallSums(allowEncoder); err != nil {
					return fmt.Errorf("--allow-encoder: %w", err)
				}
			}
			rec := remoteRecorder(ctx)
			localEncoder := ""
			if keyAgentOnly {
				// This PC's build (the one prepare copies) is pinned when
				// the second PC's OS and architecture match; an encoder
				// recorded at an absolute path there stays allowed.
				localEncoder = localEncoderOf(ctx, env)
				if pairEncoder == "" {
					if old, err := rec.Paired(ctx); err == nil && old != nil && old.Host == ep.Host && old.Port == ep.Port && old.User == ep.User &&
						old.EncoderPath != "" && remotecmd.IsAbs(old.OS, old.EncoderPath) {
						pairEncoder = old.EncoderPath
					}
				}
			}
			res, err := secondpc.Pair(ctx, l, secondpc.PairOptions{ForcedCommand: forced, AuthorizedKeysFile: authorizedKey,
				ShellKey: shellKey, AllowInstall: allow, LocalEncoder: localEncoder, Encoder: pairEncoder, From: from, RemoteDir: pairDir,
				Agent:    secondpc.AgentFinder{Path: pairAgent},
				Progress: func(s string) { fmt.Fprintln(env.stderr, "... "+s) }}, rec)
			if err != nil {
				return fmt.Errorf("%v%s", err, hostKeyHint(err))
			}
			hostKey, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(res.Remote.HostKey))
			fmt.Fprintf(env.stdout, "Paired with %s (%s/%s).\n", ep, res.OS, res.Arch)
			if res.KeyCreated {
				fmt.Fprintf(env.stdout, "  The companion's own key: %s (new)\n", res.Remote.KeyFile)
			} else {
				fmt.Fprintf(env.stdout, "  The companion's own key: %s (kept)\n", res.Remote.KeyFile)
			}
			switch {
			case keyAgentOnly:
				fmt.Fprintf(env.stdout, "  Installed in %s on that PC, agent-only (it runs nothing but the companion's agent in %s)\n", res.Installed, res.Remote.RemoteDir)
				if len(res.Allowed) > 0 {
					fmt.Fprintf(env.stdout, "  Allowed for prepare to install: %d program(s) (this PC's strata-vision build and its libraries, or --allow-encoder's)\n", len(res.Allowed))
				} else if pairEncoder == "" {
					fmt.Fprintln(env.stdout, "  No encoder build is allowed for prepare to install (this PC has none for that PC's system): give it one with --allow-encoder FILE or --encoder PATH")
				}
				if pairEncoder != "" {
					fmt.Fprintf(env.stdout, "  Allowed encoder on that PC: %s\n", pairEncoder)
				}
			case forced != "":
				fmt.Fprintf(env.stdout, "  Installed in %s on that PC, pinned to your forced command\n", res.Installed)
			default:
				fmt.Fprintf(env.stdout, "  Installed in %s on that PC, with a shell (restrict only: no forwarding, no terminal)\n", res.Installed)
			}
			if hostKey != nil {
				fmt.Fprintf(env.stdout, "  Host key pinned: %s\n", sshx.Fingerprint(hostKey))
			}
			fmt.Fprintln(env.stdout, "  Checked: the companion's key logs in on its own.")
			if res.Remote.MAC != "" {
				fmt.Fprintf(env.stdout, "  Network card %s recorded (for waking that PC)\n", res.Remote.MAC)
			}
			fmt.Fprintf(env.stdout, "Next: strata-service probe --ssh %s, then strata-service remote prepare\n", ep)
			return nil
		},
	})

	var (
		unLogin sshLogin
		force   bool
		unAK    string
		unAgent string
	)
	cmds = append(cmds, &ffcli.Command{
		Name:       "unpair",
		ShortHelp:  "remove the companion's key from the second PC, and its pin and key here",
		ShortUsage: "strata-service remote unpair [[user@]host[:port]] [--force] [flags]",
		FlagSet: env.flagSet("remote unpair", func(fs *flag.FlagSet) {
			unLogin.addFlags(fs)
			fs.BoolVar(&force, "force", false, "forget the second PC here even when it cannot be reached (its authorized_keys line then stays)")
			fs.StringVar(&unAK, "authorized-keys", "", "the file on the second PC the key was installed in, if not the default")
			fs.StringVar(&unAgent, "agent-binary", "", agentBinaryUsage)
		}),
		Exec: func(ctx context.Context, args []string) error {
			rec := remoteRecorder(ctx)
			rm, err := rec.Paired(ctx)
			if err != nil {
				return err
			}
			if rm == nil || rm.Host == "" {
				return errors.New("no second PC is paired; nothing to do")
			}
			paired := sshx.Endpoint{User: rm.User, Host: rm.Host, Port: rm.Port}
			if len(args) > 1 {
				return &exitCode{code: 2, err: errors.New("usage: strata-service remote unpair [[user@]host[:port]]")}
			}
			if len(args) == 1 {
				ep, err := sshx.ParseEndpoint(args[0])
				if err != nil {
					return err
				}
				if ep.Host != paired.Host || (ep.Port != 0 && ep.Port != paired.Port) {
					return fmt.Errorf("the paired second PC is %s, not %s", paired, args[0])
				}
			}
			// The user's own credentials are only a fallback: the
			// companion's key normally removes itself.
			r, err := secondpc.Unpair(ctx, secondpc.UnpairOptions{Creds: unLogin.credentials(env, paired), Force: force,
				AuthorizedKeysFile: unAK, Timeout: unLogin.timeout, Agent: secondpc.AgentFinder{Path: unAgent},
				Progress: func(s string) { fmt.Fprintln(env.stderr, "... "+s) }}, rec)
			if r == nil {
				return err
			}
			st, _ := settings.LoadDefault()
			fmt.Fprintf(env.stdout, "Unpaired %s: its host key pin, the companion's key and the settings entry are gone here.\n", paired)
			if st != nil && st.Vision == settings.PlacementRemote {
				fmt.Fprintln(env.stdout, "  Vision is still set to the second PC: pictures fail until you pair again or run \"strata-service vision gpu|cpu|off\".")
			}
			return err
		},
	})
	return cmds
}
