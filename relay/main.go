// Command strata-vision-relay is the image encoder Strata starts when vision
// runs on a second PC: it speaks Strata's encoder line protocol on
// stdin/stdout and does the work on the other PC over one kept-alive ssh
// connection. On the second PC the same binary runs as the agent
// ("strata-vision-relay agent") next to the real strata-vision.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/strata-companion/companion/internal/agent"
	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/version"
)

// EnvSettings names the companion settings file; the Strata config's `env`
// sets it, since the relay runs as Strata's child, maybe as another account.
const EnvSettings = "STRATA_COMPANION_SETTINGS"

const usage = `This is strata-vision-relay %s, part of Strata Companion: the image encoder that Strata
runs (its config's vision "exe") when pictures are read on a second PC, or on this PC's CPU
by the companion's choice. It is not meant to be run by hand.

How Strata starts it (exactly as it starts its own strata-vision):
  strata-vision-relay --mmproj FILE --model FILE [--gpu] [--threads N] [--max-tokens N]
It answers "READY <n_embd>" at once, then each "ENC <image> <output>" line with one
"OK ..." or "ERR <reason>" line, until "QUIT" or the end of its input. For every picture it
reads the companion settings (named by $STRATA_COMPANION_SETTINGS, else the usual
settings.json) and reads the picture where they say now: the second PC, this PC's CPU,
or nowhere (vision off). Its events go to the Strata Companion service, not to Strata's log.

To set it up, use Strata Companion's setup or:  strata-service vision remote

On the second PC the same program runs as the agent (started by the relay over ssh):
  strata-vision-relay agent --encoder FILE --mmproj FILE --model FILE [--gpu] [--threads N]
                            [--max-tokens N] [--idle-stop SECONDS] [--cuda-device N]
                            [--encoder-args WORD]
(WORD carries Strata's other encoder arguments as data: the relay writes it.)
and answers the companion's link probe (strata-service probe --ssh):
  strata-vision-relay probe [--encoder PATH] [--file NAME]...   one JSON line about this PC
  strata-vision-relay sink | source N                           the link's speed each way

Strata's --gpu, --threads and --max-tokens are read and left alone: the second PC's encoder
runs on its GPU when prepare found a usable one (else its CPU, or as the companion settings
choose), this PC's CPU at Strata's own CPU settings. --flash-attn, --min-tokens and any
argument it does not know are passed on to the encoder (one that refuses it starts without it).
`

// gcPercent and memLimit are the relay's and the agent's GC settings (see
// main).
const (
	gcPercent = 400
	memLimit  = 256 << 20
)

func main() {
	// One P: relay and agent are pipelines of goroutines handing 32 KiB ssh
	// packets to each other; with more Ps every hand-off wakes a spinning
	// thread that looks for work, which cost more CPU than the hand-off
	// itself (bench/relay: 40 -> 24 ms of relay CPU per 10.5 MB .sve on
	// loopback, no loss of speed: AES-GCM and the copies run far above
	// 1 Gbit/s on one core). GOMAXPROCS in the environment still wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// x/crypto/ssh allocates a fresh buffer for every 32 KiB packet it
	// reads: a 10.5 MB .sve is 10.5 MB of garbage on a live heap of a few
	// MiB, which at the default GOGC=100 is several collections per picture
	// (bench/relay at 1 Gbit/s: relay CPU per picture ~30 -> ~22 ms with
	// GOGC=400). The heap may grow to 5x the live one, a few MiB more RSS;
	// near the 256 MiB memory limit the collector runs as often as it must
	// again, so a large live heap does not take 5x of it. GOGC or GOMEMLIMIT
	// in the environment still win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// say writes a line for a person to stderr, which Strata appends to its
// engine log: never a line that starts with "strata" (Strata takes the last
// such line as the engine's last words when the engine dies).
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "vision relay: "+format+"\n", args...)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "agent" {
		return runAgent(ctx, args[1:], stdin, stdout, stderr)
	}
	if code, ok := runLinkProbe(ctx, args, stdin, stdout, stderr); ok {
		return code
	}
	if len(args) > 0 && args[0] == "gate" {
		// The forced command of the companion's key on a second PC paired
		// agent-only: the asked-for command is in SSH_ORIGINAL_COMMAND.
		return agent.Gate(args[1:], os.Getenv("SSH_ORIGINAL_COMMAND"), func(argv []string) int {
			if argv[0] == "version" {
				fmt.Fprintln(stdout, "strata-vision-relay", version.Version)
				return 0
			}
			if code, ok := runLinkProbe(ctx, argv, stdin, stdout, stderr); ok {
				return code
			}
			return runAgent(ctx, argv[1:], stdin, stdout, stderr)
		}, stderr)
	}
	if len(args) > 0 && args[0] == "unpair" {
		// Only the gate carries it out (it knows the pinned keys file):
		// run directly (a shell key) it says so and changes nothing.
		fmt.Fprintln(stderr, "strata-vision-relay unpair: runs only as the forced command of an agent-only key (through its gate); with a shell key the companion removes its line itself")
		return 2
	}
	if len(args) > 0 && args[0] == "authorized-keys" {
		// Pairing with a Windows second PC installs the companion's key
		// with this (ACLs by golang.org/x/sys/windows, not PowerShell).
		return agent.AuthorizedKeys(args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, "strata-vision-relay", version.Version)
		return 0
	}
	if len(args) == 0 {
		// Strata always passes --mmproj and --model: a person ran it.
		printUsage(stderr)
		return 2
	}
	sa, argsErr := relay.ParseStrataArgs(args)
	if sa.Help {
		printUsage(stdout)
		return 0
	}
	if argsErr != nil {
		// Never exit on Strata's arguments (it would not start, text
		// included): say what is wrong and answer every picture with it.
		say(stderr, "%v", argsErr)
	}
	for _, u := range sa.Unknown {
		say(stderr, "Strata passed %s, which this relay does not know; it is passed on to the encoder (an encoder that refuses it is started without it)", u)
	}

	settingsPath := os.Getenv(EnvSettings)
	if settingsPath == "" {
		settingsPath = locations.SettingsFile()
	}
	// Nothing below may wait on the network or fail: Strata needs READY
	// first, or it does not start at all. What a person must read when
	// pictures cannot work goes to stderr (Strata's engine log), once.
	sf := &relay.SettingsFile{Path: settingsPath}
	st, err := sf.Get()
	if err != nil {
		say(stderr, "%v; pictures are answered with this error until it is fixed", err)
		st = &settings.Settings{}
	}
	r := settings.Remote{}
	if st.Remote != nil {
		r = *st.Remote
	}
	nEmbd, err := gguf.NEmbd(sa.Mmproj)
	if err != nil {
		nEmbd = r.NEmbd
		if nEmbd == 0 {
			// Strata must still get READY or it does not start at all (text
			// included): READY 0, and the real problem said here.
			say(stderr, "cannot read the vision projector %s (%v) and no second PC has reported its size yet; "+
				"Strata is told READY 0 so text keeps working, but pictures need a readable mmproj: check the path in Strata's config (vision.mmproj) and that this account can read it", sa.Mmproj, err)
		}
	}
	// The second PC's device, image tokens and threads come from what
	// prepare found there and what the user chose (remote.RemoteDevice),
	// never from the --gpu, --threads and --max-tokens Strata passes: those
	// are the config's, which says gpu false so that Strata does not count
	// the relay as a GPU encoder.
	target := func(r settings.Remote) relay.Target {
		a := remote.AgentArgsFor(r, sa.Mmproj, sa.Model, sa.Extra)
		cmd, err := a.Command()
		return relay.Target{Host: r.Host, Dial: remote.SSHDialer(r), AgentCommand: cmd, IdleStopS: r.IdleStopS, Device: remote.RemoteDevice(r), Err: err, OS: a.OS}
	}
	rep := relay.NewServiceReporter(nil)
	rl := relay.New(relay.Options{
		Host:        "(none set)",
		Dial:        remote.SSHDialer(settings.Remote{}),
		NEmbd:       nEmbd,
		Settings:    sf.Get,
		Target:      target,
		LocalMmproj: sa.Mmproj,
		LocalModel:  sa.Model,
		ExtraArgs:   sa.Extra,
		Notes:       func(line string) { say(stderr, "%s", line) },
		ArgsProblem: errString(argsErr),
		Report:      rep.Event,
		ReportNEmbd: rep.NEmbd,
	})
	err = rl.Run(ctx, stdin, stdout)
	rep.Close(300 * time.Millisecond)
	if err != nil && ctx.Err() == nil {
		say(stderr, "reading Strata's requests failed: %v", err)
	}
	return 0
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, usage, version.Version)
}

// runLinkProbe runs the link probe's subcommands (probe, sink, source N:
// `strata-service probe --ssh` through a key that runs only the agent); ok
// false: args are not one of them.
func runLinkProbe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "probe":
		return agent.Probe(ctx, args[1:], "", stdout, stderr), true
	case "sink":
		return agent.Sink(stdin, stdout), true
	case "source":
		return agent.Source(args[1:], stdout, stderr), true
	}
	return 0, false
}

func runAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The agent's options are agentcmd's, the one definition the relay
	// builds its line with and the gate admits.
	c, err := agentcmd.ParseArgs(append([]string{string(agentcmd.VerbAgent)}, args...))
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay agent:", err)
		return 2
	}
	cfg := agent.ConfigFrom(c.Agent)
	cfg.Log = stderr
	if stdout == io.Writer(os.Stdout) {
		widenPipes(os.Stdin, os.Stdout)
	}
	if sig := hangupSignal(); sig != nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, sig)
		defer stop()
	}
	if err := agent.Serve(ctx, cfg, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay agent: "+err.Error())
		return 1
	}
	return 0
}
