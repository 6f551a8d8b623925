// Package owner is the one client path to the owner of Strata's config and
// the companion's settings (internal/backend) for the CLI and the wizard:
// Open chooses, in one place, the running service through its control API
// when it answers, and only when none does, Local, the same backend hosted
// in this process under the same cross-process lock; both are a
// controlapi.Owner, so the caller's code is the same either way.
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
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/stratainstall"
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
	// StrataRoot is the install an in-process owner lists and records
	// configs of ("" = the one the settings name).
	StrataRoot string
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

// Open is the one place that chooses the owner a client talks to: the
// running service (its control API client) when one answers, else the
// same backend in this process for config ("" = the one the settings
// name). IsService says which it chose.
func (o Owner) Open(ctx context.Context, config string) controlapi.Owner {
	if c := o.Service(ctx); c != nil {
		return c
	}
	return o.InProcess(config)
}

// IsService says whether ow is the running service (not this process).
func IsService(ow controlapi.Owner) bool {
	_, ok := ow.(*controlapi.Client)
	return ok
}

// InProcess is the in-process owner for config, without asking whether a
// service runs (a preview, or a caller that knows none does).
func (o Owner) InProcess(config string) *Local {
	return &Local{o: o, config: config}
}

// Local is the owner in this process: the backend the service hosts, under
// the same cross-process lock, for when no service answers. What needs the
// running service (its state, the server's start, stop and log, Strata's
// update, a repair) it refuses in words that say so.
type Local struct {
	o      Owner
	config string
	b      *backend.Backend // Over's; nil: one made per call from o
}

// Over is the in-process owner over b as it is (tests that set b's
// options, and a service's own backend).
func Over(b *backend.Backend) *Local {
	return &Local{o: Owner{SettingsPath: b.SettingsPath()}, config: b.ConfigPath(), b: b}
}

var _ controlapi.Owner = (*Local)(nil)

// backend is the backend for this owner's config; what (not "") names a
// write, announced to OnLocal first.
func (l *Local) backend(what string) *backend.Backend {
	if what != "" && l.o.OnLocal != nil {
		l.o.OnLocal(what)
	}
	if l.b != nil {
		return l.b
	}
	bo := backend.Options{SettingsPath: l.o.settingsPath(), RelayExe: l.o.RelayExe, VRAMTotalMiB: l.o.VRAM}
	if l.config != "" {
		bo.StrataRoot, bo.ConfigPath = filepath.Dir(l.config), l.config
	}
	return backend.New(bo)
}

// Backend is the backend itself (for what only this process does: a
// preview of a config, the settings' removal).
func (l *Local) Backend() *backend.Backend { return l.backend("") }

// SettingsPath is the settings file this owner writes.
func (l *Local) SettingsPath() string { return l.o.settingsPath() }

func notRunning(what string) error {
	return controlapi.Unavailable(fmt.Errorf("%s goes through the Strata Companion service, which is not running: start it (strata-service start)", what))
}

// State is what this process can say without a service: the install and
// config the settings (or this owner's config) name, where pictures are
// read with it, and a server the service does not run (stopped).
func (l *Local) State(context.Context) (*controlapi.State, error) {
	b := l.backend("")
	s, err := b.Settings()
	if err != nil {
		return nil, err
	}
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseStopped},
		Config: controlapi.ConfigInfo{StrataRoot: s.StrataRoot, Path: s.ConfigPath}, Settings: controlapi.ViewOf(s)}
	if l.config != "" {
		st.Config.StrataRoot, st.Config.Path = filepath.Dir(l.config), l.config
	}
	if p, err := b.Placement(); err == nil {
		st.Vision.Placement = string(p)
	}
	return st, nil
}

func (l *Local) SetVision(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	what := "vision " + req.Placement
	if req.DryRun {
		what = "" // a dry run writes nothing
	}
	// No service runs Strata beside this process: nothing restarts it
	// after a config change, and the words say so.
	no := false
	req.Restart = &no
	res, err := l.backend(what).SetVision(ctx, req)
	if err != nil {
		return nil, controlapi.StatusOf(err)
	}
	return res.Response(), nil
}

func (l *Local) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
	if _, err := l.backend("settings").PatchSettings(ctx, p); err != nil {
		return nil, controlapi.StatusOf(err)
	}
	return l.State(ctx) // the state after it, as the service answers
}

func (l *Local) Remote(ctx context.Context) (*settings.Remote, error) {
	r, err := l.backend("").Paired(ctx)
	return r, statusOf(err)
}

func (l *Local) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	r, err := l.backend("second PC").RecordRemote(ctx, rec)
	return r, statusOf(err)
}

// Configs lists the configs of the install the settings (or this owner's
// config) name; the one the settings name is the one that runs next.
func (l *Local) Configs(ctx context.Context) (*controlapi.ConfigList, error) {
	s, err := settings.Load(l.o.settingsPath())
	if err != nil {
		return nil, err
	}
	opts := stratainstall.Options{Settings: s, Root: l.o.StrataRoot}
	if l.config != "" {
		opts.Root = filepath.Dir(l.config)
	}
	all, err := stratainstall.Find(ctx, opts)
	if err != nil {
		return nil, err
	}
	if len(all) > 1 {
		return nil, controlapi.BadRequest(fmt.Errorf("found %d Strata installs; choose one with --strata-root DIR", len(all)))
	}
	in := &all[0]
	out := &controlapi.ConfigList{StrataRoot: in.Root, Running: s.ConfigPath}
	for _, p := range in.Configs {
		e := backend.ConfigEntry(in, p)
		e.Running = s.ConfigPath != "" && pathcmp.Same(p, s.ConfigPath)
		out.Configs = append(out.Configs, e)
	}
	return out, nil
}

// SwitchConfig, with no service, records the config in the settings: the
// service runs it when it starts.
func (l *Local) SwitchConfig(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	s, err := settings.Load(l.o.settingsPath())
	if err != nil {
		return nil, err
	}
	root := req.StrataRoot
	if root == "" {
		root = l.o.StrataRoot
	}
	if root == "" {
		in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Settings: s})
		var need *stratainstall.NeedConfigError
		switch {
		case errors.As(err, &need):
			root = need.Install.Root
		case err != nil && !strings.ContainsAny(req.Config, `/\`):
			return nil, err
		case err == nil:
			root = in.Root
		}
	}
	in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: root, Config: backend.ConfigFile(root, req.Config)})
	if err != nil {
		return nil, err
	}
	if e := backend.ConfigEntry(in, in.ConfigInUse); !e.Ready {
		return nil, controlapi.BadRequest(fmt.Errorf("%s cannot run as it is: %s", in.ConfigInUse, e.Problem))
	}
	resp := &controlapi.ConfigResponse{Previous: s.ConfigPath, Running: in.ConfigInUse}
	if req.DryRun {
		resp.Message = fmt.Sprintf("No service runs: the settings would name %s for the next start.", in.ConfigInUse)
		return resp, nil
	}
	if _, err := l.backend("the config in use").Update(ctx, "the config in use", func(s *settings.Settings) error {
		s.StrataRoot, s.ConfigPath = in.Root, in.ConfigInUse
		return nil
	}); err != nil {
		return nil, statusOf(err)
	}
	resp.Message = fmt.Sprintf("No service runs: the settings (%s) now name %s; the service runs it when it starts.", l.o.settingsPath(), in.ConfigInUse)
	return resp, nil
}

func (l *Local) RepairConfig(context.Context, controlapi.RepairRequest) (*controlapi.RepairResponse, error) {
	return nil, controlapi.Unavailable(errors.New("repair goes through the service, which is not running: start it, or set the placement again (strata-service vision cpu|remote|...)"))
}

func (l *Local) UpdateStrata(context.Context, controlapi.UpdateRequest) (*controlapi.UpdateResponse, error) {
	return nil, controlapi.Unavailable(errors.New("the Strata Companion service is not running: start it (strata-service start); it runs the update so that Strata's running engine can be replaced"))
}

func (l *Local) Logs(context.Context, int) (*controlapi.LogsResponse, error) {
	return nil, notRunning("the server's log")
}

func (l *Local) Start(context.Context) error   { return notRunning("starting Strata") }
func (l *Local) Stop(context.Context) error    { return notRunning("stopping Strata") }
func (l *Local) Restart(context.Context) error { return notRunning("restarting Strata") }
func (l *Local) Unload(context.Context) error  { return notRunning("unloading Strata's model") }

func statusOf(err error) error {
	if err == nil {
		return nil
	}
	return controlapi.StatusOf(err)
}

// SetVision has the owner make req to config: the service refuses (409)
// when it runs another file, so a change is never made to the wrong one.
func (o Owner) SetVision(ctx context.Context, config string, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	ow := o.Open(ctx, config)
	if IsService(ow) && req.Config == "" {
		req.Config = config
	}
	resp, err := ow.SetVision(ctx, req)
	return resp, controlapi.Words(err)
}

// PatchSettings has the owner change settings that need no config edit.
func (o Owner) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) error {
	_, err := o.Open(ctx, "").PatchSettings(ctx, p)
	return controlapi.Words(err)
}

// RecordRemote has the owner record what the second-PC code did.
func (o Owner) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	r, err := o.Open(ctx, "").RecordRemote(ctx, rec)
	return r, controlapi.Words(err)
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
