package main

// `strata-service vision gpu|cpu|remote|off|restore`: change where Strata's
// image encoder runs. The work is in internal/strataconfig (plan, diff,
// backup, atomic write) and internal/stratainstall (which config); this file
// only parses flags, prints, and records the choice in the companion's
// settings.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// visionOptions are the vision command's own flags.
type visionOptions struct {
	dryRun   bool
	device   string
	threads  int
	host     string
	relay    string
	vramMiB  int
	noProbe  bool
	settings string
}

// afterVisionChange runs once a change is written. nil: tell the user to
// restart the server. The service sets it to restart Strata through the
// control API when the service runs; it returns what to tell the user.
var afterVisionChange func(ctx context.Context, env *cliEnv, configPath string) (string, error)

const restartHint = "Strata reads the vision settings only at start: restart the Strata server for this to take effect."

func init() {
	var o visionOptions
	register(&command{
		name:    "vision",
		summary: "change where Strata's image encoder runs: gpu | cpu | remote | off | restore",
		usage: `strata-service vision gpu [--device N] | cpu [--threads N] | remote --host [user@]host[:port] | off | restore [--dry-run]

  gpu      read pictures on this PC's GPU (--device N: on another GPU, by nvidia-smi index; -1: the server's)
  cpu      read pictures on the CPU (--threads N, default half the cores); frees ~1.4 GB of VRAM
  remote   read pictures on a second PC over ssh, through strata-vision-relay
  off      no pictures (text only)
  restore  put the newest backup of the config back

Each prints the change as a diff; --dry-run writes nothing.`,
		setFlags: func(fs *flag.FlagSet) {
			o = visionOptions{}
			fs.BoolVar(&o.dryRun, "dry-run", false, "print the change and write nothing")
			fs.StringVar(&o.device, "device", "", "gpu: the GPU (nvidia-smi index) for the encoder; -1 for the server's own")
			fs.IntVar(&o.threads, "threads", 0, "cpu: encoder threads (default: keep the config's, else half the cores)")
			fs.StringVar(&o.host, "host", "", "remote: the second PC, [user@]host[:port] (default: the one in the companion's settings)")
			fs.StringVar(&o.relay, "relay", "", "remote: the strata-vision-relay program (default: beside strata-service)")
			fs.IntVar(&o.vramMiB, "vram-total-mib", 0, "the server GPU's memory in MiB, for --vram-reserve-mib (default: ask nvidia-smi)")
			fs.BoolVar(&o.noProbe, "no-probe", false, "do not run nvidia-smi (the VRAM reserve is then 700 MiB)")
		},
		run: func(ctx context.Context, env *cliEnv, args []string) error { return runVision(ctx, env, o, args) },
	})
}

// loadSettings reads the companion's settings from their usual place.
func loadSettings() (*settings.Settings, string, error) {
	path := locations.SettingsFile()
	s, err := settings.Load(path)
	return s, path, err
}

// resolveStrata finds the install and the config the command works on.
func resolveStrata(ctx context.Context, env *cliEnv, s *settings.Settings) (*stratainstall.Install, error) {
	return stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot, Config: env.configPath, Settings: s})
}

func runVision(ctx context.Context, env *cliEnv, o visionOptions, args []string) error {
	if len(args) != 1 {
		if len(args) == 0 {
			return &exitCode{code: 2, err: errors.New("say where: gpu, cpu, remote, off or restore (see --help)")}
		}
		return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[1])}
	}
	what := args[0]
	pl := settings.Placement(what)
	if what != "restore" && !pl.Valid() {
		return &exitCode{code: 2, err: fmt.Errorf("unknown placement %q: say gpu, cpu, remote, off or restore", what)}
	}
	if err := checkVisionFlags(what, o); err != nil {
		return &exitCode{code: 2, err: err}
	}
	// When the service runs, it makes the change (and restarts Strata).
	if handled, err := visionThroughService(ctx, env, what, o); handled {
		return err
	}
	s, settingsPath, err := loadSettings()
	if err != nil {
		return err
	}
	in, err := resolveStrata(ctx, env, s)
	if err != nil {
		return err
	}
	cfg := in.ConfigInUse

	var ch *strataconfig.Change
	var endpoint sshx.Endpoint
	if what == "restore" {
		if ch, _, err = strataconfig.PlanRestore(cfg); err != nil {
			return err
		}
	} else {
		req := strataconfig.VisionRequest{Placement: pl, Threads: o.threads, RelayExe: o.relay, SettingsPath: settingsPath, VRAMTotalMiB: o.vramMiB}
		if o.device != "" {
			d, _ := strconv.Atoi(o.device)
			req.Device = &d
		}
		if pl == settings.PlacementRemote {
			host := o.host
			if host == "" && s.Remote != nil && s.Remote.Host != "" {
				host = s.Remote.Host
				endpoint = sshx.Endpoint{Host: s.Remote.Host, User: s.Remote.User, Port: s.Remote.Port}
			} else if host == "" {
				return &exitCode{code: 2, err: errors.New("say which PC reads the pictures: vision remote --host [user@]host[:port]")}
			} else if endpoint, err = sshx.ParseEndpoint(host); err != nil {
				return &exitCode{code: 2, err: err}
			}
			req.Host = host
		}
		if pl != settings.PlacementOff && req.VRAMTotalMiB == 0 && !o.noProbe {
			req.VRAMTotalMiB = serverVRAM(ctx, cfg)
		}
		if ch, err = strataconfig.PlanVision(cfg, req); err != nil {
			return err
		}
	}

	if !ch.Changed() {
		fmt.Fprintf(env.stdout, "%s already has vision %s: nothing to change.\n", cfg, describePlacement(what))
		return recordVision(env, s, settingsPath, in, cfg, pl, what, endpoint, o.dryRun)
	}
	fmt.Fprint(env.stdout, ch.Diff())
	for _, n := range ch.Notes {
		fmt.Fprintln(env.stdout, "note: "+n)
	}
	if o.dryRun {
		fmt.Fprintln(env.stdout, "Dry run: nothing was written.")
		return nil
	}
	backup, err := ch.Apply()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Saved %s (the old one is in %s).\n", cfg, backup)
	if err := recordVision(env, s, settingsPath, in, cfg, pl, what, endpoint, false); err != nil {
		return err
	}
	if afterVisionChange != nil {
		msg, err := afterVisionChange(ctx, env, cfg)
		if msg != "" {
			fmt.Fprintln(env.stdout, msg)
		}
		return err
	}
	fmt.Fprintln(env.stdout, restartHint)
	return nil
}

func checkVisionFlags(what string, o visionOptions) error {
	if o.device != "" {
		if what != "gpu" {
			return fmt.Errorf("--device is for `vision gpu`")
		}
		if _, err := strconv.Atoi(o.device); err != nil {
			return fmt.Errorf("--device %q: give the GPU's nvidia-smi index (0, 1, ...), or -1 for the server's own GPU", o.device)
		}
	}
	if o.threads != 0 && what != "cpu" {
		return fmt.Errorf("--threads is for `vision cpu`")
	}
	if o.threads < 0 {
		return fmt.Errorf("--threads must be 1 or more")
	}
	if (o.host != "" || o.relay != "") && what != "remote" {
		return fmt.Errorf("--host and --relay are for `vision remote`")
	}
	return nil
}

func describePlacement(what string) string {
	switch what {
	case "gpu":
		return "on the GPU"
	case "cpu":
		return "on the CPU"
	case "remote":
		return "on the second PC"
	case "off":
		return "off"
	}
	return "as in its newest backup"
}

// serverVRAM is the largest NVIDIA GPU's memory (0 when unknown), asked only
// when the config has no --vram-reserve-mib yet (the only use of it).
func serverVRAM(ctx context.Context, configPath string) int {
	if c, err := strataconfig.Read(configPath); err == nil && c.VRAMReserveMiB() > 0 {
		return 0
	}
	r := probe.Probe(ctx, probe.Options{})
	best := 0
	for _, g := range r.GPUs {
		best = max(best, g.TotalMiB)
	}
	return best
}

// recordVision writes the choice into the companion's settings, so the
// service, the tray and the relay agree with the config.
func recordVision(env *cliEnv, s *settings.Settings, path string, in *stratainstall.Install, cfg string, pl settings.Placement, what string, ep sshx.Endpoint, dryRun bool) error {
	if dryRun {
		return nil
	}
	if what == "restore" {
		c, err := strataconfig.Read(cfg)
		if err != nil {
			return err
		}
		pl = c.Placement()
	}
	changed := s.StrataRoot != in.Root || s.ConfigPath != cfg || s.Vision != pl
	s.StrataRoot, s.ConfigPath, s.Vision = in.Root, cfg, pl
	if pl == settings.PlacementRemote && ep.Host != "" {
		if s.Remote == nil || s.Remote.Host != ep.Host || s.Remote.Port != ep.Port || (ep.User != "" && s.Remote.User != ep.User) {
			// Another PC: its pinned key and paths belong to the old one.
			s.Remote = &settings.Remote{Host: ep.Host, User: ep.User, Port: ep.Port}
			changed = true
			fmt.Fprintf(env.stdout, "The second PC is now %s: pair it with `strata-service remote pair %s` if you have not.\n", ep.Host, joinEndpoint(ep))
		}
	}
	if !changed {
		return nil
	}
	if err := s.Save(path); err != nil {
		return fmt.Errorf("the Strata config was changed, but the companion's settings could not be saved (%v); run the command again as an administrator", err)
	}
	return nil
}

func joinEndpoint(e sshx.Endpoint) string {
	out := e.Host
	if strings.Contains(out, ":") {
		out = "[" + out + "]"
	}
	if e.User != "" {
		out = e.User + "@" + out
	}
	if e.Port != 0 {
		out += ":" + strconv.Itoa(e.Port)
	}
	return out
}
