package cli

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

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/stratainstall"
	"github.com/strata-companion/companion/service/daemon"
)

// visionOptions are the vision command's own flags.
type visionOptions struct {
	dryRun  bool
	device  string
	threads int
	host    string
	relay   string
	vramMiB int
	noProbe bool
	yes     bool
}

// visionCmd is `vision`: where pictures are read.
func visionCmd(env *cliEnv) *ffcli.Command {
	var o visionOptions
	return &ffcli.Command{
		Name:       "vision",
		ShortHelp:  "change where Strata's image encoder runs: gpu | cpu | remote | off | restore | repair",
		ShortUsage: "strata-service vision gpu [--device N] | cpu [--threads N] | remote --host [user@]host[:port] | off | restore | repair [--dry-run] [--yes]",
		LongHelp: `  gpu      read pictures on this PC's GPU (--device N: on another GPU, by nvidia-smi index; -1: the server's)
  cpu      read pictures on this PC's CPU, through strata-vision-relay (--threads N); frees ~1.4 GB of VRAM
  remote   read pictures on a second PC over ssh, through strata-vision-relay
  off      no pictures (text only)
  restore  put the newest backup of the config back
  repair   after Strata's setup rewrote the config: put back what the user
           had (the placement, and port, host, api_key or any other key it
           dropped or changed) from the companion's last known good config,
           through the service; says what first (--dry-run stops there) and
           restarts Strata once (asked on a terminal, else --yes)

Moves among cpu, remote and off change only the companion's settings once
Strata's config names the relay: no restart. Moves to or from gpu edit the
config and restart Strata; the command says which before it does it.
Each prints the config's change as a diff; --dry-run writes nothing.

With a running service, a change that restarts Strata (text stops for a
while) is asked about first on a terminal; elsewhere (a script) it is
refused with exit code 2 unless --yes is given. Without a service nothing
is restarted: the command only saves the config.`,
		FlagSet: env.flagSet("vision", func(fs *flag.FlagSet) {
			o = visionOptions{}
			fs.BoolVar(&o.dryRun, "dry-run", false, "print the change and write nothing")
			fs.StringVar(&o.device, "device", "", "gpu: the GPU (nvidia-smi index) for the encoder; -1 for the server's own")
			fs.IntVar(&o.threads, "threads", 0, "cpu: encoder threads (default: keep the config's, else half the cores)")
			fs.StringVar(&o.host, "host", "", "remote: the second PC, [user@]host[:port] (default: the one in the companion's settings)")
			fs.StringVar(&o.relay, "relay", "", "remote, cpu: the strata-vision-relay program (default: beside strata-service; only without a running service)")
			fs.IntVar(&o.vramMiB, "vram-total-mib", 0, "the server GPU's memory in MiB, to size the config's VRAM reserve argument (default: ask nvidia-smi; without a running service)")
			fs.BoolVar(&o.yes, "yes", false, "with a running service: make a change that restarts Strata without asking (needed when not at a terminal)")
			fs.BoolVar(&o.noProbe, "no-probe", false, "do not run nvidia-smi (the VRAM reserve is then 700 MiB; without a running service)")
		}),
		Exec: func(ctx context.Context, args []string) error { return runVision(ctx, env, o, args) },
	}
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
	if what == "repair" {
		return repairVision(ctx, env, o)
	}
	pl := settings.Placement(what)
	if what != "restore" && !pl.Valid() {
		return &exitCode{code: 2, err: fmt.Errorf("unknown placement %q: say gpu, cpu, remote, off or restore", what)}
	}
	if err := checkVisionFlags(what, o); err != nil {
		return &exitCode{code: 2, err: err}
	}
	req := controlapi.VisionRequest{Placement: what, Threads: o.threads, Host: o.host, DryRun: o.dryRun}
	if o.device != "" {
		d, _ := strconv.Atoi(o.device)
		req.Device = &d
	}
	// When the service runs, it is the one writer: the change goes
	// through its control API (and it restarts Strata when needed).
	if handled, err := visionThroughService(ctx, env, openOwner(ctx), req, o); handled {
		return err
	}
	// No service: this process hosts the same backend, under the same
	// cross-process lock.
	s, settingsPath, err := loadSettings()
	if err != nil {
		return err
	}
	in, err := resolveStrata(ctx, env, s)
	if err != nil {
		return err
	}
	vram := func(ctx context.Context, cfg string) int {
		if o.vramMiB > 0 || o.noProbe {
			return o.vramMiB
		}
		return daemon.ServerVRAM(ctx, cfg)
	}
	local := owner.Owner{SettingsPath: settingsPath, RelayExe: o.relay, VRAM: vram, OnLocal: func(string) { onLocalOwner() }}.InProcess(in.ConfigInUse)
	res, err := local.SetVision(ctx, req)
	if err != nil {
		var re *backend.RequestError
		if errors.As(err, &re) && req.Placement == "remote" && o.host == "" {
			return &exitCode{code: 2, err: errors.New("say which PC reads the pictures: vision remote --host [user@]host[:port]")}
		}
		return err
	}
	printVision(env, res.Diff, res.Notes, res.Message, o.dryRun)
	if o.dryRun {
		return nil
	}
	if res.Written {
		fmt.Fprintf(env.stdout, "Saved %s (the old one is in %s).\n", in.ConfigInUse, res.Backup)
	}
	if res.NewSecondPC != "" {
		fmt.Fprintf(env.stdout, "The second PC is now %s: pair it with `strata-service remote pair %s` if you have not.\n", res.NewSecondPC, res.NewSecondPC)
	}
	return nil
}

// printVision shows the diff, the plan's notes and what the change means
// (restart or not), before anything else is said.
func printVision(env *cliEnv, diff string, notes []string, message string, dryRun bool) {
	fmt.Fprint(env.stdout, diff)
	for _, n := range notes {
		fmt.Fprintln(env.stdout, "note: "+n)
	}
	if message != "" {
		fmt.Fprintln(env.stdout, message)
	}
	if dryRun {
		fmt.Fprintln(env.stdout, "Dry run: nothing was written.")
	}
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
	if o.host != "" && what != "remote" {
		return fmt.Errorf("--host is for `vision remote`")
	}
	if o.relay != "" && what != "remote" && what != "cpu" {
		return fmt.Errorf("--relay is for `vision remote` and `vision cpu`")
	}
	return nil
}

// repairVision has the service put back what Strata's setup took from the
// companion's setup (the placement, and port, host, api_key or any other
// key it dropped or changed), from the companion's last known good config.
// It says what first; --dry-run stops there; the restart it needs is asked
// about on a terminal and refused elsewhere without --yes.
func repairVision(ctx context.Context, env *cliEnv, o visionOptions) error {
	c := openOwner(ctx) // the in-process owner refuses: repair is the service's
	dry, err := c.RepairConfig(ctx, controlapi.RepairRequest{DryRun: true})
	if err != nil {
		return ownerError(err)
	}
	printRepair(env, dry)
	if o.dryRun || !dry.RestartNeeded {
		if o.dryRun {
			fmt.Fprintln(env.stdout, "Dry run: nothing was written.")
		}
		return nil
	}
	if !o.yes {
		if err := confirmRestart(env); err != nil {
			return err
		}
	}
	r, err := c.RepairConfig(ctx, controlapi.RepairRequest{Confirm: true})
	if err != nil {
		return ownerError(err)
	}
	fmt.Fprintln(env.stdout, r.Message)
	if r.Restarted {
		fmt.Fprintln(env.stdout, "Follow Strata's start with `strata-service status`.")
	}
	return nil
}

// printRepair shows what the repair puts back: the diff, then in words.
func printRepair(env *cliEnv, r *controlapi.RepairResponse) {
	if r.Diff != "" {
		fmt.Fprint(env.stdout, r.Diff)
		if !strings.HasSuffix(r.Diff, "\n") {
			fmt.Fprintln(env.stdout)
		}
	}
	for _, ch := range r.Changes {
		fmt.Fprintln(env.stdout, "  - "+ch)
	}
	fmt.Fprintln(env.stdout, r.Message)
}
