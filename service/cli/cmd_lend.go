package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/lender"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/version"
)

// lendCmd is `lend`: this PC lends its GPU to another PC (docs/second-pc-guide.md).
func lendCmd(env *cliEnv) *ffcli.Command {
	var o lender.Options
	var dryRun, asJSON, foreground bool
	addCommon := func(fs *flag.FlagSet) {
		fs.StringVar(&o.User, "user", "", "the account whose agent reads the pictures (default: the one that runs this; under sudo, yours)")
	}
	addCode := func(fs *flag.FlagSet) {
		addCommon(fs)
		fs.DurationVar(&o.Valid, "code-valid", lend.DefaultValid, "how long the pairing code works")
		fs.BoolVar(&asJSON, "json", false, `print the code as one JSON line ({"code","name","expires",...})`)
	}
	root := env.flagSet("lend", func(fs *flag.FlagSet) {
		addCode(fs)
		fs.StringVar(&o.Name, "name", "", "this PC's name on the network (default: its host name)")
		fs.BoolVar(&dryRun, "dry-run", false, "list every step for this PC's system and change nothing")
		fs.BoolVar(&foreground, "foreground", false, "stay and lend until ended (Ctrl-C, SIGTERM): what the lender service runs")
		fs.IntVar(&o.SSHPort, "ssh-port", 22, "the ssh server's port on this PC")
		fs.IntVar(&o.PairPort, "pair-port", lend.DefaultPairPort, "the TCP port of the pairing exchange")
		fs.StringVar(&o.AgentBinary, "agent-binary", "", "the strata-vision-relay build to install (default: the one beside this program)")
	})
	o.Progress = func(s string) { fmt.Fprintln(env.stderr, "... "+s) }
	o.Version = version.Version
	sub := func(name, short string, exec func(ctx context.Context) error) *ffcli.Command {
		flags := addCommon
		if name == "code" {
			flags = addCode
		}
		return &ffcli.Command{Name: name, ShortHelp: short, ShortUsage: "strata-service lend " + name + " [flags]",
			FlagSet: env.flagSet("lend "+name, flags),
			Exec: func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("lend %s takes no arguments", name)}
				}
				return exec(ctx)
			}}
	}
	return &ffcli.Command{
		Name:       "lend",
		ShortHelp:  "lend this PC's GPU to another PC: open ssh, install the agent, show a pairing code (stop, status, code)",
		ShortUsage: "strata-service lend [--name NAME] [--user ACCOUNT] [--code-valid DURATION] [--dry-run] [--json] [--foreground]",
		FlagSet:    root,
		Subcommands: []*ffcli.Command{
			sub("stop", "stop lending: the lender service gone, the paired PCs' keys out, the agent gone, the ssh server as it was", func(ctx context.Context) error {
				if !account.Privileged() {
					return lender.ErrStopNeedsAdmin
				}
				// First the service that pairs and announces, so that it
				// does neither while the rest is undone.
				stopLenderService(o.Progress)
				rep, err := lender.Stop(ctx, o)
				if errors.Is(err, lender.ErrNotLending) {
					// Stopped already (the tray, an earlier stop): done.
					fmt.Fprintln(env.stdout, "This PC is not lending its GPU: nothing to stop.")
					return nil
				}
				if rep != nil {
					fmt.Fprintf(env.stdout, "Stopped lending this PC's GPU.\n")
					for _, p := range rep.KeysRemoved {
						fmt.Fprintf(env.stdout, "  %s may no longer read pictures here (its key is removed)\n", p)
					}
					if rep.Ended > 0 {
						fmt.Fprintf(env.stdout, "  ended %d running agent program(s)\n", rep.Ended)
					}
					for _, s := range rep.Undone {
						fmt.Fprintf(env.stdout, "  %s\n", s.Say)
					}
				}
				return err
			}),
			sub("status", "what lending changed on this PC, and which PCs are paired", func(ctx context.Context) error {
				r, err := lender.Load()
				if errors.Is(err, lender.ErrNotLending) {
					fmt.Fprintln(env.stdout, "This PC is not lending its GPU (strata-service lend starts it).")
					return nil
				}
				if err != nil {
					return err
				}
				fmt.Fprint(env.stdout, lender.Describe(r, time.Now()))
				fmt.Fprintln(env.stdout, lenderServiceWords())
				return nil
			}),
			sub("code", "show a new pairing code (the old one stops working)", func(ctx context.Context) error {
				c, exp, err := lender.NewCode(ctx, o.Valid)
				if err != nil {
					if errors.Is(err, lender.ErrNotLending) {
						return errors.New("this PC is not lending its GPU (strata-service lend starts lending)")
					}
					return err
				}
				r, _ := lender.Load()
				printCode(env, asJSON, c, exp, r)
				return nil
			}),
		},
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown lend subcommand %q (one of: stop, status, code)", args[0])}
			}
			if dryRun {
				if o.User == "" {
					o.User = "(this account)"
				}
				if o.SSHPort == 0 {
					o.SSHPort = 22
				}
				fmt.Fprintf(env.stdout, "lend would do, on this %s PC (nothing is changed now):\n", runtime.GOOS)
				for _, s := range lender.Plan(runtime.GOOS, o) {
					fmt.Fprintln(env.stdout, s)
				}
				return nil
			}
			setup := func(ctx context.Context) (*lender.Record, error) {
				o.GPUs = localGPUs(ctx)
				return lender.Setup(ctx, o)
			}
			if !foreground {
				// Set up here (its steps and errors on this console), then
				// have the lender service keep lending.
				r, err := setup(ctx)
				if err != nil {
					return err
				}
				r, service, why := keepLending(ctx, o, r, o.Progress)
				printCode(env, asJSON, r.Code.Code, r.Code.Expires, r)
				sayKeepLending(env.stderr, asJSON, service, why)
				return nil
			}
			// What the lender service runs: set up, show the code, then
			// pair and announce until stopped.
			serve := func(ctx context.Context) error {
				r, err := setup(ctx)
				if err != nil {
					return err
				}
				printCode(env, asJSON, r.Code.Code, r.Code.Expires, r)
				o.Announce = lend.Announce
				return lender.Serve(ctx, o, nil)
			}
			if handled, err := runLenderUnderServiceManager(env, serve); handled {
				return err
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx)
		},
	}
}

func printCode(env *cliEnv, asJSON bool, c lend.Code, exp time.Time, r *lender.Record) {
	if r == nil {
		r = &lender.Record{}
	}
	name := r.Name
	if asJSON {
		b, _ := json.Marshal(map[string]any{"code": c.String(), "name": name, "expires": exp.UTC().Format(time.RFC3339),
			"pair_port": r.PairPort, "ssh_port": r.SSHPort, "user": r.User})
		fmt.Fprintln(env.stdout, string(b))
		return
	}
	fmt.Fprintf(env.stdout, "\n    Pairing code:  %s\n\n", c)
	fmt.Fprintf(env.stdout, "On the PC that runs Strata, pick %q in the setup's Second PC page and type this code\n(or run: strata-service remote pair --code %s %s).\nIt works once, until %s.\n", name, c, name, exp.Local().Format("15:04"))
}

// localGPUs are this PC's NVIDIA GPUs, for the announcement (none: an empty list).
func localGPUs(ctx context.Context) []lend.GPU {
	var out []lend.GPU
	for _, p := range nvsmi.Candidates("", exec.LookPath, nil) {
		res := nvsmi.Query(ctx, nvsmi.Local(p, 0), p, false)
		for _, g := range res.GPUs {
			out = append(out, lend.GPU{Name: g.Name, TotalMiB: g.TotalMiB})
		}
		if len(res.GPUs) > 0 {
			break
		}
	}
	return out
}

// remoteFindCmd is `remote find`: the lenders on this network.
func remoteFindCmd(env *cliEnv) *ffcli.Command {
	var asJSON bool
	var wait time.Duration
	return &ffcli.Command{
		Name:       "find",
		ShortHelp:  "list the PCs on this network that lend their GPU (strata-service lend there)",
		ShortUsage: "strata-service remote find [--json] [--wait DURATION]",
		FlagSet: env.flagSet("remote find", func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print a JSON array")
			fs.DurationVar(&wait, "wait", 3*time.Second, "how long to listen for answers")
		}),
		Exec: func(ctx context.Context, args []string) error {
			found, err := lend.Browse(ctx, wait)
			if err != nil {
				return fmt.Errorf("looking for lenders on the network: %w", err)
			}
			paired, _ := settings.LoadDefault()
			type row struct {
				lend.Announcement
				Paired bool `json:"paired"`
			}
			rows := make([]row, 0, len(found))
			for _, a := range found {
				rows = append(rows, row{a, paired != nil && paired.Remote != nil && paired.Remote.Host == a.Host && paired.Remote.Port == a.Port})
			}
			if asJSON {
				b, _ := json.Marshal(rows)
				fmt.Fprintln(env.stdout, string(b))
				return nil
			}
			if len(rows) == 0 {
				fmt.Fprintln(env.stdout, "No PC lends its GPU on this network. On the other PC run strata-service lend (or pick \"lend this PC's GPU\" in its setup).\n"+
					"If it does and is not found: it may be on another network or Wi-Fi with client isolation, or its firewall treats this network as Public.\n"+
					"Then pair by its address: strata-service remote pair --code CODE ADDRESS")
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tADDRESS\tGPU\tVRAM\tAGENT\tPAIRED")
			for _, r := range rows {
				gpu, vram := "no NVIDIA GPU", "-"
				if len(r.GPUs) > 0 {
					gpu, vram = r.GPUs[0].Name, fmt.Sprintf("%.1f GB", float64(r.GPUs[0].TotalMiB)/1024)
				}
				p := "no"
				if r.Paired {
					p = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), gpu, vram, r.AgentVersion, p)
			}
			return tw.Flush()
		},
	}
}

// pairWithCode is `remote pair --code CODE NAME|HOST[:PORT]`.
func pairWithCode(ctx context.Context, env *cliEnv, typed, target string, wait, timeout time.Duration, allowEncoder string) error {
	code, err := lend.ParseCode(typed)
	if err != nil {
		return &exitCode{code: 2, err: fmt.Errorf("--code: %v", err)}
	}
	targets, err := codeTargets(ctx, target, wait)
	if err != nil {
		return err
	}
	var allow []string
	if enc := localEncoderOf(ctx, env); enc != "" {
		allow, _ = prepare.InstallSums(enc)
	}
	if allowEncoder != "" {
		more, err := prepare.InstallSums(allowEncoder)
		if err != nil {
			return fmt.Errorf("--allow-encoder: %w", err)
		}
		allow = append(allow, more...)
	}
	res, err := pairing.PairWithCode(ctx, pairing.CodeOptions{Code: code, Targets: targets, Recorder: remoteRecorder(ctx), Allow: allow,
		Timeout: timeout, Progress: func(s string) { fmt.Fprintln(env.stderr, "... "+s) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Paired with %s@%s (%s/%s) by its code.\n", res.Remote.User, res.Remote.Host, res.OS, res.Arch)
	fmt.Fprintf(env.stdout, "  The companion's key may run only its agent there (in %s); host key pinned.\n", res.Remote.RemoteDir)
	fmt.Fprintln(env.stdout, "Next: strata-service remote prepare, then strata-service vision remote")
	return nil
}

// namesakeGrace is how long pairing by name listens for other PCs of the
// same name after the first answer.
const namesakeGrace = 500 * time.Millisecond

// codeTargets are the lenders target names: those announcing that name
// (each with the host key it announced), else the address typed.
func codeTargets(ctx context.Context, target string, wait time.Duration) ([]pairing.CodeTarget, error) {
	host, port, err := pairing.ParseCodeAddress(target)
	if err != nil {
		return nil, &exitCode{code: 2, err: err}
	}
	if port == 0 && net.ParseIP(host) == nil {
		// Every PC answering to that name within the wait, but no longer
		// than namesakeGrace after the first: a lender answers at once, and
		// another PC of the same name (an impostor) answers as fast.
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		var ts []pairing.CodeTarget
		var mu sync.Mutex
		lend.Watch(wctx, func(a lend.Announcement) {
			if !strings.EqualFold(a.Name, host) && a.Host != host {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ts) == 0 {
				time.AfterFunc(namesakeGrace, cancel)
			}
			ts = append(ts, pairing.CodeTarget{Name: a.Name, Host: a.Host, PairPort: a.PairPort, SSHPort: a.Port, HostKey: a.HostKey})
		})
		mu.Lock()
		defer mu.Unlock()
		if len(ts) > 0 {
			return ts, nil
		}
	}
	if port == 0 {
		port = lend.DefaultPairPort
	}
	return []pairing.CodeTarget{{Name: host, Host: host, PairPort: port}}, nil
}
