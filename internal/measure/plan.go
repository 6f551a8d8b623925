package measure

// Planning a trial: the program the product would start for a placement,
// with the arguments it would pass, from Strata's config, the companion
// settings and this PC's probe. Each bad case is caught here, before
// anything starts, with a sentence that says what to do.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// GPUNeedMiB is the VRAM a GPU trial needs free: what Strata's GPU encoder
// holds once warmed up (1383 MiB measured on the reference machine) plus
// the headroom the probe asks of a spare GPU.
const GPUNeedMiB = 1383 + 256

// Inputs is what a plan reads.
type Inputs struct {
	// Config is the Strata config in use (its vision block names the
	// projector and the model); nil when none is chosen yet.
	Config *strataconfig.Config
	// Settings are the companion settings (the local encoder, the CPU
	// choices, the paired second PC).
	Settings *settings.Settings
	// GPUs are this PC's, from the probe (for the GPU trial).
	GPUs []probe.GPU
	// StrataRunning says Strata's server runs now (it may hold the VRAM a
	// GPU trial needs).
	StrataRunning bool
	// RelayExe is strata-vision-relay ("": the config's when it names the
	// relay, else the one beside this program).
	RelayExe string
	Bound    time.Duration
}

// files are the projector and the model shard from the config's vision block.
func (in Inputs) files() (mmproj, model string, err error) {
	c := in.Config
	if c == nil {
		return "", "", problem(KindNoProjector, "no Strata config is chosen yet, so there is no picture setup to try: choose Strata's folder first")
	}
	if c.Vision == nil {
		return "", "", problem(KindNoProjector, "Strata's config %s has pictures turned off (no vision part), so there is no projector to try: run Strata's setup with pictures on first", c.Path)
	}
	mmproj, model = c.VisionFiles()
	for _, f := range []struct{ path, what string }{{mmproj, "vision projector (mmproj)"}, {model, "text model"}} {
		if f.path == "" {
			return "", "", problem(KindNoProjector, "Strata's config %s names no %s: run Strata's setup with pictures on again", c.Path, f.what)
		}
		if st, err := os.Stat(f.path); err != nil || !st.Mode().IsRegular() {
			return "", "", problem(KindNoProjector, "the %s %s is missing: run Strata's setup again, which downloads it", f.what, f.path)
		}
	}
	return mmproj, model, nil
}

// encoder is this PC's strata-vision: the one the settings record (the
// relay runs it), else the install's engine folder, else the config's own
// vision.exe when it is not the relay.
func (in Inputs) encoder() (string, error) {
	var tried []string
	if in.Settings != nil && in.Settings.LocalEncoder != "" {
		if isFile(in.Settings.LocalEncoder) {
			return in.Settings.LocalEncoder, nil
		}
		tried = append(tried, in.Settings.LocalEncoder)
	}
	if c := in.Config; c != nil {
		if p := c.LocalEncoder(); p != "" {
			return p, nil
		}
		if c.Vision != nil && c.Vision.Exe != "" && !c.NamesRelay() {
			if p := c.Resolve(c.Vision.Exe); isFile(p) {
				return p, nil
			}
		}
		tried = append(tried, filepath.Join(c.Root, "engine", exeName("strata-vision")))
	}
	if len(tried) == 0 {
		return "", problem(KindNoEncoder, "Strata's image encoder (strata-vision) was not found: choose Strata's folder first")
	}
	return "", problem(KindNoEncoder, "Strata's image encoder was not found at %s: run Strata's setup again, which installs it", tried[len(tried)-1])
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func exeName(n string) string {
	if runtime.GOOS == "windows" {
		return n + ".exe"
	}
	return n
}

func (in Inputs) common(t *Trial) {
	t.Bound = in.Bound
	if c := in.Config; c != nil {
		t.StrataVersion = EngineVersion(c.Root)
		t.Dir = c.Root
		// Strata gives its encoder the config's env entries.
		for k, v := range c.Env {
			t.Env = append(t.Env, k+"="+v)
		}
	}
}

// CPU plans this PC's CPU: strata-vision as the relay runs it for pictures
// read on the CPU (Strata's own CPU settings): the Q8_0 projector when the
// install has one, the settings' threads (else half the logical
// processors), the settings' image tokens (else 300), never --gpu.
func CPU(in Inputs) (*Trial, error) {
	exe, err := in.encoder()
	if err != nil {
		return nil, err
	}
	mmproj, model, err := in.files()
	if err != nil {
		return nil, err
	}
	st := in.Settings
	if st == nil {
		st = &settings.Settings{}
	}
	d := relay.LocalCPUDevice(st)
	t := &Trial{Placement: settings.PlacementCPU, Exe: exe,
		Device: fmt.Sprintf("%s, %d %s", settings.PlacementCPU.Name(""), d.Threads, plural(d.Threads, "thread")),
		Args: []string{"--mmproj", relay.CPUProjector(mmproj), "--model", model,
			"--threads", strconv.Itoa(d.Threads), "--max-tokens", strconv.Itoa(d.MaxTokens)}}
	in.common(t)
	// As Strata's gpu:false: no CUDA_VISIBLE_DEVICES (the encoder hides the
	// GPUs from itself on the CPU).
	return t, nil
}

// GPU plans this PC's GPU: strata-vision --gpu with the image tokens
// Strata's config gives a GPU encoder (else 1024), on the GPU Strata would
// use (the config's vision.cuda_device, else the usable NVIDIA GPU with the
// most VRAM). Refused when the probe finds no such GPU, or it has not the
// encoder's VRAM free (Strata holding it, or other programs).
func GPU(in Inputs) (*Trial, error) {
	var best *probe.GPU
	var want *int
	if c := in.Config; c != nil && c.Vision != nil && c.Vision.CUDADevice != nil {
		want = c.Vision.CUDADevice
	}
	for i := range in.GPUs {
		g := &in.GPUs[i]
		if !probe.Usable(*g) {
			continue
		}
		if want != nil {
			if g.Index == *want {
				best = g
			}
			continue
		}
		if best == nil || g.TotalMiB > best.TotalMiB {
			best = g
		}
	}
	if best == nil {
		if want != nil {
			return nil, problem(KindNoGPU, "Strata's config reads pictures on GPU %d, which this PC's NVIDIA driver does not show (or cannot run Strata's encoder)", *want)
		}
		return nil, problem(KindNoGPU, "this PC has no NVIDIA GPU that can run Strata's encoder (an RTX 20 series or newer, driver 525 or newer), so there is nothing to measure there")
	}
	name := fmt.Sprintf("GPU %d (%s)", best.Index, best.Name)
	if best.FreeMiB >= 0 && best.FreeMiB < GPUNeedMiB {
		if in.StrataRunning {
			return nil, problem(KindNoRoom, "%s has only %d MiB free and the trial needs about %d MiB: Strata is running and holds that memory. Measure while Strata is stopped (or after it has unloaded the model), so the trial takes nothing from it", name, best.FreeMiB, GPUNeedMiB)
		}
		return nil, problem(KindNoRoom, "%s has only %d MiB free and the trial needs about %d MiB: close the programs that use the GPU and try again", name, best.FreeMiB, GPUNeedMiB)
	}
	exe, err := in.encoder()
	if err != nil {
		return nil, err
	}
	mmproj, model, err := in.files()
	if err != nil {
		return nil, err
	}
	tokens := remote.GPUMaxTokens
	if v := in.Config.Vision; v.GPU && v.MaxTokens > 0 {
		tokens = v.MaxTokens
	}
	t := &Trial{Placement: settings.PlacementGPU, Exe: exe, Device: name,
		Args: []string{"--mmproj", mmproj, "--model", model, "--gpu", "--max-tokens", strconv.Itoa(tokens)}}
	in.common(t)
	// Strata picks the encoder's GPU this way (vision.cuda_device).
	t.Env = append(t.Env, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(best.Index))
	return t, nil
}

// Remote plans the second PC: strata-vision-relay started as Strata starts
// it (--mmproj M --model X from the config), reading a copy of the settings
// that says vision remote with the paired record: the paired key, the
// pinned host key, the device prepare found there.
func Remote(in Inputs) (*Trial, error) {
	st := in.Settings
	if st == nil || st.Remote == nil || st.Remote.Host == "" {
		return nil, problem(KindNotPaired, "no second PC is paired yet: pair one on the second-PC page first")
	}
	rm := *st.Remote
	if rm.RemoteDir == "" {
		return nil, problem(KindNotPrepared, "the second PC %s is paired but not prepared (Strata's encoder and the picture files are not on it yet): prepare it on the second-PC page first", rm.Host)
	}
	mmproj, model, err := in.files()
	if err != nil {
		return nil, err
	}
	exe := in.RelayExe
	if exe == "" && in.Config != nil && in.Config.NamesRelay() {
		exe = in.Config.Resolve(in.Config.Vision.Exe)
	}
	if exe == "" {
		self, err := os.Executable()
		if err == nil {
			exe = filepath.Join(filepath.Dir(self), exeName("strata-vision-relay"))
		}
	}
	if !isFile(exe) {
		return nil, problem(KindNoEncoder, "the relay %s is missing: reinstall Strata Companion, which puts it beside strata-service", exe)
	}
	cp := *st
	cp.Vision = settings.PlacementRemote
	cp.FallbackCPU = nil // a trial of the second PC never falls back to this PC
	r := rm
	cp.Remote = &r
	dev := remote.RemoteDevice(rm)
	where := "its CPU"
	if dev.GPU {
		where = "its GPU"
		if dev.GPUName != "" {
			where = dev.GPUName
		}
	}
	t := &Trial{Placement: settings.PlacementRemote, Exe: exe, Relay: true, RelaySettings: &cp, Host: rm.Host,
		Device: fmt.Sprintf("%s %s (%s)", settings.PlacementRemote.Name(""), rm.Host, where),
		Args:   []string{"--mmproj", mmproj, "--model", model}}
	in.common(t)
	return t, nil
}

// EngineVersion is root's engine/BUILD.json "version" ("" when unknown).
func EngineVersion(root string) string {
	var b struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(root, "engine", "BUILD.json"))
	if err == nil {
		_ = json.Unmarshal(data, &b)
	}
	return b.Version
}

func plural(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}
