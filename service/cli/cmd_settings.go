package cli

// `strata-service settings`: show or change the companion's settings that
// need no Strata restart (fallback to the CPU, the second PC's idle stop,
// Wake-on-LAN, notifications). Through the running service's POST
// /v1/settings; with no service, the same backend in this process.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/owner"
	"github.com/strata-companion/companion/internal/settings"
)

type settingsOptions struct {
	fallbackCPU, notifications, wake string
	idleStop, wakePort, wakeWait     int
	mac, wakeBroadcast               string
}

// settingsCmd is `settings`: show or change the settings that need no restart.
func settingsCmd(env *cliEnv) *ffcli.Command {
	var o settingsOptions
	return &ffcli.Command{
		Name:       "settings",
		ShortHelp:  "show or change settings that need no restart: CPU fallback, idle stop, Wake-on-LAN, notifications",
		ShortUsage: "strata-service settings [--fallback-cpu on|off] [--idle-stop-s N] [--mac MAC] [--wake on|off] [--notifications on|off]",
		FlagSet: env.flagSet("settings", func(fs *flag.FlagSet) {
			o = settingsOptions{idleStop: -1, wakePort: -1, wakeWait: -1}
			fs.StringVar(&o.fallbackCPU, "fallback-cpu", "", "on: read a picture on this PC's CPU when the second PC cannot be reached; off: answer with the reason")
			fs.Var((*unsetInt)(&o.idleStop), "idle-stop-s", "stop the second PC's encoder after `N` seconds without a picture (0: never)")
			fs.StringVar(&o.mac, "mac", "", "the second PC's network card, aa:bb:cc:dd:ee:ff (for Wake-on-LAN)")
			fs.StringVar(&o.wake, "wake", "", "on: wake the second PC with Wake-on-LAN when it does not answer; off: do not")
			fs.StringVar(&o.wakeBroadcast, "wake-broadcast", "", "with --wake on: where the magic packet goes (default 255.255.255.255)")
			fs.Var((*unsetInt)(&o.wakePort), "wake-port", "with --wake on: the UDP `port` (default 9)")
			fs.Var((*unsetInt)(&o.wakeWait), "wake-wait-s", "with --wake on: how many `seconds` a picture waits for the woken PC (default 60)")
			fs.StringVar(&o.notifications, "notifications", "", "on|off: the tray's notifications")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q", args[0])}
			}
			p, err := o.patch()
			if err != nil {
				return &exitCode{code: 2, err: err}
			}
			if p == nil {
				s, err := settings.Load(locations.SettingsFile())
				if err != nil {
					return err
				}
				b, _ := json.MarshalIndent(s, "", "  ")
				fmt.Fprintf(env.stdout, "%s\n", b)
				return nil
			}
			return patchSettings(ctx, env, *p)
		},
	}
}

func onOff(name, v string) (*bool, error) {
	switch v {
	case "":
		return nil, nil
	case "on", "true", "yes":
		t := true
		return &t, nil
	case "off", "false", "no":
		f := false
		return &f, nil
	}
	return nil, fmt.Errorf("--%s %q: say on or off", name, v)
}

// patch turns the flags into a SettingsPatch (nil: no flag given).
func (o settingsOptions) patch() (*controlapi.SettingsPatch, error) {
	var p controlapi.SettingsPatch
	var err error
	given := false
	if p.FallbackCPU, err = onOff("fallback-cpu", o.fallbackCPU); err != nil {
		return nil, err
	}
	if p.Notifications, err = onOff("notifications", o.notifications); err != nil {
		return nil, err
	}
	wake, err := onOff("wake", o.wake)
	if err != nil {
		return nil, err
	}
	if wake != nil {
		w := &controlapi.WakeSettings{Enabled: *wake, Broadcast: o.wakeBroadcast, Port: max(o.wakePort, 0), WaitS: max(o.wakeWait, 0)}
		p.Wake = w
	} else if o.wakeBroadcast != "" || o.wakePort >= 0 || o.wakeWait >= 0 {
		return nil, errors.New("--wake-broadcast, --wake-port and --wake-wait-s go with --wake on")
	}
	if o.idleStop >= 0 {
		n := o.idleStop
		p.IdleStopS = &n
	}
	if o.mac != "" {
		m := o.mac
		p.MAC = &m
	}
	given = p.FallbackCPU != nil || p.Notifications != nil || p.Wake != nil || p.IdleStopS != nil || p.MAC != nil
	if !given {
		return nil, nil
	}
	return &p, nil
}

// patchSettings asks the running service, else hosts the backend.
func patchSettings(ctx context.Context, env *cliEnv, p controlapi.SettingsPatch) error {
	ow := openOwner(ctx)
	if _, err := ow.PatchSettings(ctx, p); err != nil {
		return ownerError(err)
	}
	if owner.IsService(ow) {
		fmt.Fprintln(env.stdout, "The service saved the settings; they apply from the next picture on (no restart).")
		return nil
	}
	fmt.Fprintln(env.stdout, "Saved "+locations.SettingsFile()+"; it applies from the next picture on (no restart).")
	return nil
}

// unsetInt is an int flag whose -1 means "not given" (left as it is); its
// help shows no default, so -1 never reaches a person.
type unsetInt int

func (u *unsetInt) String() string {
	if u == nil || *u <= 0 { // -1: not given; 0 prints as nothing too, as flag compares with the zero value
		return ""
	}
	return strconv.Itoa(int(*u))
}

func (u *unsetInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a whole number of 0 or more", s)
	}
	*u = unsetInt(n)
	return nil
}
