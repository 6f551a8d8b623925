// Command strata-vision-relay is the image encoder Strata starts when vision
// runs on a second PC: it speaks Strata's encoder line protocol on
// stdin/stdout and does the work on the other PC over one kept-alive ssh
// connection. On the second PC the same binary runs as the agent
// ("strata-vision-relay agent") next to the real strata-vision.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/strata-companion/companion/internal/agent"
	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/version"
)

// EnvSettings names the companion settings file; the Strata config's `env`
// sets it, since the relay runs as Strata's child, maybe as another account.
const EnvSettings = "STRATA_COMPANION_SETTINGS"

const usage = `strata-vision-relay %s: Strata's image encoder, with the work done on a second PC.

Strata starts it as its vision "exe":
  strata-vision-relay --mmproj FILE --model FILE [--gpu] [--threads N] [--max-tokens N]
It answers READY at once, then each "ENC <image> <output>" line with "OK ..." or "ERR <reason>".
The second PC comes from the companion settings named by $STRATA_COMPANION_SETTINGS
(else the companion's usual settings file).

On the second PC (started by the relay over ssh):
  strata-vision-relay agent --encoder FILE --mmproj FILE --model FILE [--gpu] [--threads N]
                            [--max-tokens N] [--idle-stop SECONDS]

Flags:
`

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "agent" {
		return runAgent(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, "strata-vision-relay", version.Version)
		return 0
	}
	fs := flag.NewFlagSet("strata-vision-relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mmproj := fs.String("mmproj", "", "the vision projector GGUF (as Strata passes it)")
	model := fs.String("model", "", "the text model shard 1 or vocabulary stub (as Strata passes it)")
	gpu := fs.Bool("gpu", false, "run the encoder on the second PC's GPU")
	threads := fs.Int("threads", 0, "CPU encoder threads on the second PC")
	maxTokens := fs.Int("max-tokens", 0, "image tokens per picture")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usage, version.Version)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}

	settingsPath := os.Getenv(EnvSettings)
	if settingsPath == "" {
		settingsPath = locations.SettingsFile()
	}
	// Nothing below may wait on the network or fail: Strata needs READY
	// first, or it does not start at all.
	st, err := settings.Load(settingsPath)
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay: "+err.Error())
		st = &settings.Settings{}
	}
	r := settings.Remote{}
	if st.Remote != nil {
		r = *st.Remote
	}
	nEmbd, err := gguf.NEmbd(*mmproj)
	if err != nil {
		nEmbd = r.NEmbd
		fmt.Fprintf(stderr, "strata-vision-relay: n_embd not read from the mmproj (%v); using %d, the value the second PC last reported\n", err, nEmbd)
	}
	osName := relay.RemoteOS(r.OS, r.RemoteDir)
	encoder := r.EncoderPath
	if encoder == "" {
		encoder = "strata-vision"
		if osName == "windows" {
			encoder += ".exe"
		}
	}
	rm, rmodel := relay.RemoteFiles(*mmproj, *model)
	a := relay.AgentArgs{OS: osName, RemoteDir: r.RemoteDir, Encoder: encoder, Mmproj: rm, Model: rmodel,
		GPU: *gpu, Threads: *threads, MaxTokens: *maxTokens, IdleStopS: r.IdleStopS}
	host := r.Host
	if host == "" {
		host = "(none set)"
	}
	rl := relay.New(relay.Options{
		Host:         host,
		Dial:         relay.SSHDialer(r),
		AgentCommand: a.Command(),
		NEmbd:        nEmbd,
		SavedNEmbd:   r.NEmbd,
		SaveNEmbd: func(n int) error {
			s, err := settings.Load(settingsPath)
			if err != nil {
				return err
			}
			if s.Remote == nil {
				return fmt.Errorf("no second PC in %s", settingsPath)
			}
			s.Remote.NEmbd = n
			return s.Save(settingsPath)
		},
		Stderr: stderr,
	})
	fmt.Fprintf(stderr, "strata-vision-relay %s: pictures are read on second PC %s; READY %d\n", version.Version, host, nEmbd)
	if err := rl.Run(ctx, stdin, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "strata-vision-relay: "+err.Error())
	}
	return 0
}

func runAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-vision-relay agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg agent.Config
	fs.StringVar(&cfg.Encoder, "encoder", "", "strata-vision on this PC (empty: files and status only, for prepare)")
	fs.StringVar(&cfg.Mmproj, "mmproj", "", "the vision projector GGUF on this PC")
	fs.StringVar(&cfg.Model, "model", "", "the vocabulary stub on this PC")
	fs.BoolVar(&cfg.GPU, "gpu", false, "GPU encoder")
	fs.IntVar(&cfg.Threads, "threads", 0, "CPU encoder threads")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 0, "image tokens per picture")
	idle := fs.Int("idle-stop", 0, "stop the encoder after this many seconds without a picture (0: keep it running)")
	fs.StringVar(&cfg.Dir, "dir", "", "folder receiving uploads (default: this program's folder)")
	fs.StringVar(&cfg.ScratchParent, "scratch", "", "folder for the private scratch folder (default: the temp folder)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.IdleStop = time.Duration(*idle) * time.Second
	cfg.Log = stderr
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
