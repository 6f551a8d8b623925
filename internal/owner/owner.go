// Package owner is the one client path to the owner of Strata's config and
// the companion's settings (internal/backend) for the CLI and the wizard:
// the running service through its control API when it answers, and only
// when none does, the same backend hosted in this process under the same
// cross-process lock.
package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
)

// Owner reaches the backend.
type Owner struct {
	// SettingsPath is the settings file ("" = locations.SettingsFile()).
	SettingsPath string
	// RelayExe is strata-vision-relay for an in-process backend ("" = beside this program).
	RelayExe string
	// NewClient makes a control API client (default controlapi.NewClient).
	NewClient func() (*controlapi.Client, error)
	// VRAM tells an in-process backend the server GPU's memory.
	VRAM func(ctx context.Context, configPath string) int
	// OnLocal runs before this process writes through its own backend (no
	// service answered); tests set it to prove a running service did it.
	OnLocal func(what string)
}

func (o Owner) settingsPath() string {
	if o.SettingsPath != "" {
		return o.SettingsPath
	}
	return locations.SettingsFile()
}

// Service is a client of the running service, nil when none answers (no
// address file, or a stale one).
func (o Owner) Service(ctx context.Context) *controlapi.Client {
	newClient := o.NewClient
	if newClient == nil {
		newClient = controlapi.NewClient
	}
	c, err := newClient()
	if err != nil {
		return nil
	}
	if _, err := c.State(ctx); err != nil {
		return nil
	}
	return c
}

// Local is the backend in this process for config ("" = the settings alone).
func (o Owner) Local(what, config string) *backend.Backend {
	if o.OnLocal != nil {
		o.OnLocal(what)
	}
	bo := backend.Options{SettingsPath: o.settingsPath(), RelayExe: o.RelayExe, VRAMTotalMiB: o.VRAM}
	if config != "" {
		bo.StrataRoot, bo.ConfigPath = filepath.Dir(config), config
	}
	return backend.New(bo)
}

// serviceErr turns the service's refusal into its own words.
func serviceErr(err error) error {
	var se *controlapi.StatusError
	if errors.As(err, &se) {
		return errors.New(se.Message)
	}
	return err
}

// SetVision has the owner make req to config: the service refuses (409)
// when it runs another file, so a change is never made to the wrong one.
func (o Owner) SetVision(ctx context.Context, config string, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	if c := o.Service(ctx); c != nil {
		if req.Config == "" {
			req.Config = config
		}
		resp, err := c.SetVision(ctx, req)
		return resp, serviceErr(err)
	}
	what := "vision " + req.Placement
	if req.DryRun {
		what = "" // a dry run writes nothing
	}
	b := o.Local(what, config)
	res, err := b.SetVision(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Response(), nil
}

// PatchSettings has the owner change settings that need no config edit.
func (o Owner) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) error {
	if c := o.Service(ctx); c != nil {
		_, err := c.PatchSettings(ctx, p)
		return serviceErr(err)
	}
	_, err := o.Local("settings", "").PatchSettings(ctx, p)
	return err
}

// RecordRemote has the owner record what the second-PC code did.
func (o Owner) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	if c := o.Service(ctx); c != nil {
		r, err := c.RecordRemote(ctx, rec)
		return r, serviceErr(err)
	}
	return o.Local("second PC", "").RecordRemote(ctx, rec)
}

// Endpoint is a second PC as [user@]host[:port].
func Endpoint(r *settings.Remote) string {
	out := r.Host
	if r.User != "" {
		out = r.User + "@" + out
	}
	if r.Port != 0 {
		out += ":" + strconv.Itoa(r.Port)
	}
	return out
}

// SaveSettings makes the settings file say n, through the owner's calls:
// the placement (when that needs no config edit: a config edit is a plan's
// or a restore's), the second PC's record, notifications and the CPU
// fallback. What the calls cannot say is never dropped silently: the file
// is read back and any field that still differs is an error that names it.
func (o Owner) SaveSettings(ctx context.Context, n *settings.Settings) error {
	if n.ConfigPath == "" || n.Vision != "" && !n.Vision.Valid() {
		return errors.New("the settings name no Strata config or placement: choose them in the setup first")
	}
	// Settings that record no placement (a service that took an install
	// and nothing else yet): the placement follows the config.
	dry := &controlapi.VisionResponse{}
	if n.Vision != "" {
		var err error
		if dry, err = o.placement(ctx, n); err != nil {
			return err
		}
	}
	return o.saveRest(ctx, n, dry.RestartNeeded)
}

// placement sets n's placement when that needs no config edit and says
// whether it does (then it is the plan's, or a restore's).
func (o Owner) placement(ctx context.Context, n *settings.Settings) (*controlapi.VisionResponse, error) {
	req := controlapi.VisionRequest{Placement: string(n.Vision), DryRun: true}
	if n.Vision == settings.PlacementRemote && n.Remote != nil && n.Remote.Host != "" {
		req.Host = Endpoint(n.Remote)
	}
	if n.Vision == settings.PlacementCPU && n.CPUThreads > 0 {
		req.Threads = n.CPUThreads
	}
	dry, err := o.SetVision(ctx, n.ConfigPath, req)
	if err != nil {
		return nil, err
	}
	if !dry.RestartNeeded {
		req.DryRun = false
		no := false
		req.Restart = &no
		if _, err := o.SetVision(ctx, n.ConfigPath, req); err != nil {
			return nil, err
		}
	}
	return dry, nil
}

// saveRest records n's second PC and switches, then reads the file back.
func (o Owner) saveRest(ctx context.Context, n *settings.Settings, restartNeeded bool) error {
	cur, err := settings.Load(o.settingsPath())
	if err != nil {
		return err
	}
	// The second PC n names replaces the recorded one; none where one is
	// recorded unpairs it.
	switch {
	case n.Remote != nil && n.Remote.Host != "" && !reflect.DeepEqual(n.Remote, cur.Remote):
		r := *n.Remote
		if _, err := o.RecordRemote(ctx, controlapi.RemoteRecord{Replace: &r}); err != nil {
			return err
		}
	case (n.Remote == nil || n.Remote.Host == "") && cur.Remote != nil:
		if _, err := o.RecordRemote(ctx, controlapi.RemoteRecord{Unpair: true}); err != nil {
			return err
		}
	}
	// Switches: an unset one in n is its default, sent as such when the
	// file says otherwise (nil in a patch would leave it as it is).
	var p controlapi.SettingsPatch
	if cur.NotificationsOn() != n.NotificationsOn() {
		v := n.NotificationsOn()
		p.Notifications = &v
	}
	if fallback(cur) != fallback(n) {
		v := fallback(n)
		p.FallbackCPU = &v
	}
	if p.Notifications != nil || p.FallbackCPU != nil {
		if err := o.PatchSettings(ctx, p); err != nil {
			return err
		}
	}
	// Trial pictures n holds that the file does not (the wizard's
	// Pictures page): one record per place.
	for _, pl := range measuredPlaces {
		m := n.LastMeasured(pl)
		if m == nil || sameMeasurement(m, cur.LastMeasured(pl)) {
			continue
		}
		if err := o.PatchSettings(ctx, controlapi.SettingsPatch{Measured: &controlapi.MeasuredRecord{Placement: pl, Measurement: *m}}); err != nil {
			return err
		}
	}
	after, err := settings.Load(o.settingsPath())
	if err != nil {
		return err
	}
	lost := differs(n, after)
	if restartNeeded {
		// The placement is the config's edit (the plan's, or the restore's
		// that follows a rollback): not a settings field to set here.
		lost = without(lost, "vision")
	}
	if len(lost) > 0 {
		return fmt.Errorf("the companion's settings were saved without %s (the owner has no way to set it this way): nothing else is missing; set it again with strata-service settings, or report this", strings.Join(lost, ", "))
	}
	return nil
}

func without(l []string, x string) []string {
	var out []string
	for _, s := range l {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func fallback(s *settings.Settings) bool { return s.FallbackCPU != nil && *s.FallbackCPU }

// differs names the fields of want that got did not take. The install and
// config are the service's to record (a switch does), the local encoder
// the backend's to derive, and an unset placement follows the config:
// those are not compared.
func differs(want, got *settings.Settings) []string {
	var out []string
	if want.Vision != "" && want.Vision != got.Vision {
		out = append(out, "vision")
	}
	if !reflect.DeepEqual(want.Remote, got.Remote) && !(want.Remote == nil && got.Remote == nil) {
		out = append(out, "remote")
	}
	if want.NotificationsOn() != got.NotificationsOn() {
		out = append(out, "notifications")
	}
	if fallback(want) != fallback(got) {
		out = append(out, "fallback_cpu")
	}
	if want.CPUThreads != got.CPUThreads && want.CPUThreads != 0 {
		out = append(out, "cpu_threads")
	}
	for _, pl := range measuredPlaces {
		if m := want.LastMeasured(pl); m != nil && !sameMeasurement(m, got.LastMeasured(pl)) {
			out = append(out, "measured."+string(pl))
		}
	}
	for k, v := range want.Extra {
		if string(got.Extra[k]) != string(v) {
			out = append(out, k)
		}
	}
	return out
}

// measuredPlaces are the places a trial picture is recorded for.
var measuredPlaces = []settings.Placement{settings.PlacementGPU, settings.PlacementCPU, settings.PlacementRemote}

// sameMeasurement: b records what a does (nil matches nothing).
func sameMeasurement(a, b *settings.Measurement) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
