package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

const gpuConfig = fakestrata.GPUVisionConfig

type fixture struct {
	in     *fakestrata.Install
	b      *Backend
	mu     sync.Mutex
	events []events.Event
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{in: fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: gpuConfig})}
	f.b = New(Options{SettingsPath: f.in.Settings, StrataRoot: f.in.Root, ConfigPath: f.in.Config, RelayExe: f.in.Relay,
		Publish: func(e events.Event) {
			// The event comes after the change is on disk.
			if _, err := os.Stat(f.in.Settings); err != nil && e.Kind != "remote.connected" {
				panic("event published before the settings were written")
			}
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		}})
	return f
}

func (f *fixture) nEvents() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.events) }

func (f *fixture) set(t *testing.T, pl string, mod ...func(*controlapi.VisionRequest)) *VisionResult {
	t.Helper()
	req := controlapi.VisionRequest{Placement: pl}
	if pl == "remote" {
		req.Host = "me@pc2.lan:2222"
	}
	for _, m := range mod {
		m(&req)
	}
	res, err := f.b.SetVision(context.Background(), req)
	if err != nil {
		t.Fatalf("vision %s: %v", pl, err)
	}
	return res
}

// agree checks that the config, the settings and the backend's answer say
// the same placement.
func (f *fixture) agree(t *testing.T, want settings.Placement) {
	t.Helper()
	c, err := strataconfig.Read(f.in.Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := settings.Load(f.in.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if got := Placement(c, s); got != want || s.Vision != want {
		t.Fatalf("config+settings say %s, settings.vision %s, want %s", got, s.Vision, want)
	}
}

func TestPlacementSemantics(t *testing.T) {
	f := newFixture(t)
	mtime := func() time.Time { st, _ := os.Stat(f.in.Config); return st.ModTime() }

	// GPU -> CPU: the config now names the relay (restart), the settings say cpu.
	res := f.set(t, "cpu", func(r *controlapi.VisionRequest) { r.Threads = 6 })
	if !res.RestartNeeded || !res.ConfigWritten || !strings.Contains(res.Message, "restart") {
		t.Fatalf("gpu -> cpu: %+v", res)
	}
	c, _ := strataconfig.Read(f.in.Config)
	if !c.NamesRelay() || c.Vision.GPU || c.Env[strataconfig.EnvSettings] != f.in.Settings {
		t.Fatalf("relay config: exe %s gpu %v env %v", c.Vision.Exe, c.Vision.GPU, c.Env)
	}
	s, _ := settings.Load(f.in.Settings)
	if s.LocalEncoder != filepath.Join(f.in.Root, "engine", "strata-vision") || s.CPUThreads != 6 {
		t.Fatalf("settings: local encoder %q threads %d", s.LocalEncoder, s.CPUThreads)
	}
	f.agree(t, settings.PlacementCPU)

	// Among cpu / remote / off: only the settings change, no restart.
	before, _ := os.ReadFile(f.in.Config)
	t0 := mtime()
	for _, pl := range []settings.Placement{settings.PlacementRemote, settings.PlacementOff, settings.PlacementCPU, settings.PlacementRemote} {
		n := f.nEvents()
		res := f.set(t, string(pl))
		if res.RestartNeeded || res.ConfigWritten || !res.SettingsChanged || res.Diff != "" || !strings.Contains(res.Message, "no restart") {
			t.Fatalf("-> %s: %+v", pl, res)
		}
		if f.nEvents() != n+1 {
			t.Fatalf("-> %s: %d events, want one", pl, f.nEvents()-n)
		}
		f.agree(t, pl)
	}
	if after, _ := os.ReadFile(f.in.Config); !bytes.Equal(before, after) || !mtime().Equal(t0) {
		t.Fatal("a move among cpu/remote/off wrote the config")
	}
	s, _ = settings.Load(f.in.Settings)
	if s.Remote == nil || s.Remote.Host != "pc2.lan" || s.Remote.User != "me" || s.Remote.Port != 2222 {
		t.Fatalf("second PC: %+v", s.Remote)
	}

	// Nothing to change: no write, no event.
	n := f.nEvents()
	if res := f.set(t, "remote"); res.SettingsChanged || res.ConfigWritten || !strings.Contains(res.Message, "nothing to change") {
		t.Fatalf("same again: %+v", res)
	}
	if f.nEvents() != n {
		t.Fatal("an event for no change")
	}

	// Back to the GPU: the config is edited (restart) and names Strata's encoder again.
	res = f.set(t, "gpu")
	if !res.RestartNeeded || !res.ConfigWritten {
		t.Fatalf("-> gpu: %+v", res)
	}
	c, _ = strataconfig.Read(f.in.Config)
	if c.NamesRelay() || !c.Vision.GPU {
		t.Fatalf("gpu config: %+v", c.Vision)
	}
	f.agree(t, settings.PlacementGPU)

	// Off from the GPU removes the block (restart).
	res = f.set(t, "off")
	if !res.RestartNeeded || !res.ConfigWritten {
		t.Fatalf("gpu -> off: %+v", res)
	}
	if c, _ = strataconfig.Read(f.in.Config); c.Vision != nil {
		t.Fatal("off left a vision block")
	}
	f.agree(t, settings.PlacementOff)

	// Restore puts the GPU config back.
	res = f.set(t, "restore")
	if !res.ConfigWritten || res.Placement != settings.PlacementGPU {
		t.Fatalf("restore: %+v", res)
	}
	f.agree(t, settings.PlacementGPU)
}

// The uninstaller's restore of a config in which Strata's own encoder read
// pictures on the CPU: the settings name no placement afterwards, so a
// reinstalled companion does not report the config as rewritten by
// Strata's setup (nor offer to repair it), and the placement shown is the
// config's.
func TestRestoreOfStratasOwnCPUEncoderLeavesNoPlacement(t *testing.T) {
	own := strings.Replace(gpuConfig, `"gpu": true`, `"gpu": false`, 1)
	if own == gpuConfig {
		t.Fatal("the GPU config has no \"gpu\": true to turn off")
	}
	f := &fixture{in: fakestrata.NewInstall(t, "", fakestrata.InstallOptions{Config: own})}
	f.b = New(Options{SettingsPath: f.in.Settings, StrataRoot: f.in.Root, ConfigPath: f.in.Config, RelayExe: f.in.Relay})
	c, _ := strataconfig.Read(f.in.Config)
	if c.NamesRelay() || c.Placement() != settings.PlacementCPU {
		t.Fatalf("the starting config: relay %v, placement %s", c.NamesRelay(), c.Placement())
	}
	f.set(t, "cpu") // through the relay now
	f.agree(t, settings.PlacementCPU)
	res := f.set(t, "restore")
	if !res.ConfigWritten || res.Placement != settings.PlacementCPU {
		t.Fatalf("restore: %+v", res)
	}
	c, _ = strataconfig.Read(f.in.Config)
	s, err := settings.Load(f.in.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if c.NamesRelay() || s.Vision != "" || Placement(c, s) != settings.PlacementCPU {
		t.Fatalf("after restore: relay %v, settings.vision %q, placement %s", c.NamesRelay(), s.Vision, Placement(c, s))
	}
}

func TestDryRunWritesNothingAndSaysWhetherItRestarts(t *testing.T) {
	f := newFixture(t)
	before, _ := os.ReadFile(f.in.Config)
	res := f.set(t, "remote", func(r *controlapi.VisionRequest) { r.DryRun = true })
	if !res.RestartNeeded || res.Diff == "" || !strings.Contains(res.Message, "Strata will restart") {
		t.Fatalf("dry run: %+v", res)
	}
	if after, _ := os.ReadFile(f.in.Config); !bytes.Equal(before, after) {
		t.Fatal("the dry run wrote the config")
	}
	if _, err := os.Stat(f.in.Settings); !errors.Is(err, os.ErrNotExist) || f.nEvents() != 0 {
		t.Fatal("the dry run wrote the settings or published")
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	for _, req := range []controlapi.VisionRequest{
		{Placement: "elsewhere"},
		{Placement: "remote"},                // no second PC known
		{Placement: "cpu", Host: "pc2"},      // host is for remote
		{Placement: "remote", Host: "a b:x"}, // not an endpoint
	} {
		_, err := f.b.SetVision(context.Background(), req)
		var re *RequestError
		if !errors.As(err, &re) || len(err.Error()) < 10 {
			t.Fatalf("%+v: %v, want a RequestError with words", req, err)
		}
	}
	if _, err := os.Stat(f.in.Settings); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refusal wrote the settings")
	}
}

// A person's edit of the config saved while a change is planned is refused
// as a conflict and kept; the settings are put back.
func TestConcurrentEditIsRefusedAndKept(t *testing.T) {
	f := newFixture(t)
	edited := strings.Replace(mustRead(t, f.in.Config), `"port": 8095`, `"port": 8096`, 1)
	// The VRAM probe runs before the plan: the person saves then.
	ch, err := strataconfig.PlanVision(f.in.Config, strataconfig.VisionRequest{Placement: settings.PlacementOff})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f.in.Config, []byte(edited), 0o644)
	if _, err := ch.Apply(); !errors.Is(err, strataconfig.ErrChangedOnDisk) {
		t.Fatalf("stale plan applied: %v", err)
	}
	if mustRead(t, f.in.Config) != edited {
		t.Fatal("the person's edit was lost")
	}
	// Through the backend, the change is planned on the edited file and keeps it.
	f.set(t, "off")
	if !strings.Contains(mustRead(t, f.in.Config), `"port": 8096`) {
		t.Fatal("the backend lost the person's edit")
	}
	bk := strataconfig.Backups(f.in.Config)
	if len(bk) == 0 || mustRead(t, bk[0]) != edited {
		t.Fatal("the backup does not hold what was on disk")
	}
}

// When another process holds the lock, a change waits, then is refused
// as a conflict that names the holder.
func TestLockHeldByAnotherProcessIsAConflict(t *testing.T) {
	f := newFixture(t)
	l, err := filelock.TryLock(LockPath(f.in.Settings))
	if err != nil {
		t.Fatal(err)
	}
	l.WritePID()
	f.b.o.LockWait = 50 * time.Millisecond
	_, err = f.b.SetVision(context.Background(), controlapi.VisionRequest{Placement: "cpu"})
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) || !strings.Contains(err.Error(), "try again") {
		t.Fatalf("err = %v", err)
	}
	l.Unlock()
	f.set(t, "cpu")
	f.agree(t, settings.PlacementCPU)
}

// Many goroutines and two backends (as a CLI and a service would be) change
// the placement at once: every change is whole, and the files agree.
func TestConcurrentChangesKeepConfigAndSettingsAgreeing(t *testing.T) {
	f := newFixture(t)
	other := New(f.b.o) // a second owner of the same files, e.g. a CLI
	places := []string{"gpu", "cpu", "remote", "off"}
	f.set(t, "remote") // know a second PC
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			b := f.b
			if i%2 == 1 {
				b = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.SetVision(context.Background(), controlapi.VisionRequest{Placement: places[(i+round)%4]})
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		s, _ := settings.Load(f.in.Settings)
		f.agree(t, s.Vision)
	}
}

func TestPatchSettingsAndRelayReport(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	yes, idle, mac := true, 120, "AA:BB:CC:DD:EE:FF"
	if _, err := f.b.PatchSettings(ctx, controlapi.SettingsPatch{IdleStopS: &idle}); err == nil || !strings.Contains(err.Error(), "pair one first") {
		t.Fatalf("idle stop without a second PC: %v", err)
	}
	if _, err := f.b.PatchSettings(ctx, controlapi.SettingsPatch{FallbackCPU: &yes}); err != nil {
		t.Fatal(err)
	}
	f.set(t, "remote")
	bad := "nope"
	if _, err := f.b.PatchSettings(ctx, controlapi.SettingsPatch{MAC: &bad}); err == nil || !strings.Contains(err.Error(), "aa:bb") {
		t.Fatalf("bad mac: %v", err)
	}
	n := f.nEvents()
	s, err := f.b.PatchSettings(ctx, controlapi.SettingsPatch{IdleStopS: &idle, MAC: &mac, Wake: &controlapi.WakeSettings{Enabled: true, Port: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if f.nEvents() != n+1 {
		t.Fatal("want one event for one patch")
	}
	disk, _ := settings.Load(f.in.Settings)
	if disk.FallbackCPU == nil || !*disk.FallbackCPU || disk.Remote.IdleStopS != 120 || disk.Remote.MAC != "aa:bb:cc:dd:ee:ff" ||
		disk.Remote.Wake == nil || disk.Remote.Wake.Port != 7 || disk.Remote.IdleStopS != s.Remote.IdleStopS {
		t.Fatalf("settings on disk: %+v %+v", disk, disk.Remote)
	}

	n = f.nEvents()
	err = f.b.RelayReport(ctx, controlapi.RelayReport{NEmbd: 2560, Events: []events.Event{{Kind: events.RemoteConnected, Message: "connected"}}})
	if err != nil {
		t.Fatal(err)
	}
	disk, _ = settings.Load(f.in.Settings)
	if disk.Remote.NEmbd != 2560 {
		t.Fatalf("n_embd %d", disk.Remote.NEmbd)
	}
	if f.nEvents() != n+2 || f.events[n].Kind != SettingsChanged || f.events[n+1].Kind != events.RemoteConnected {
		t.Fatalf("events: %+v", f.events[n:])
	}
	// The same n_embd again: no write, only the relay's events.
	st, _ := os.Stat(f.in.Settings)
	f.b.RelayReport(ctx, controlapi.RelayReport{NEmbd: 2560})
	st2, _ := os.Stat(f.in.Settings)
	if !st.ModTime().Equal(st2.ModTime()) || f.nEvents() != n+2 {
		t.Fatal("an unchanged n_embd was written or announced")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
