package relay_test

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/agent"
	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
)

// The second PC's contract, crossed end to end with the real code of each
// side: every agent command line the relay can build (from Strata's own
// argument list and the second-PC record, as relay/main.go does) is
// quoted for that PC's shell, split and parsed as the gate does, admitted by
// the gate's policy, and parsed back by the agent into the Config it runs
// with, which must say what the relay meant. On this OS the real gate
// (agent.GateCheck) reads the same lines. Hostile variants of those lines
// are refused.

// contractPC is one second PC: its OS, the agent's folder and program, and
// an encoder outside that folder that pairing may pin.
type contractPC struct {
	goos, dir, pinned string
}

func (pc contractPC) agentPath() string {
	return remotecmd.Join(pc.goos, pc.dir, remote.AgentName(pc.goos))
}

var contractPCs = []contractPC{
	{"linux", "/home/ana/strata vision", "/opt/strata/engine/strata-vision"},
	{"linux", "/srv/sv", "/home/ana/Strata/engine/strata-vision"},
	{"windows", `C:\Users\Ana Lu\strata-companion`, `C:\Strata\engine\strata-vision.exe`},
	{"windows", `D:\sv`, `E:\Program Files\Strata\engine\strata-vision.exe`},
}

// contractRemotes are the records prepare and the user's choices can make
// for pc: each device choice, one or two GPUs, a chosen CUDA index, threads,
// tokens, idle stop, and the encoder in the agent's folder, below it or
// pinned outside it.
func contractRemotes(pc contractPC) []settings.Remote {
	idx := func(i int) *int { return &i }
	one := []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144}}
	two := []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3050", TotalMiB: 8192}, {Index: 1, Name: "NVIDIA GeForce RTX 4090", TotalMiB: 24564}}
	encoders := []string{"", "bin/" + strings.TrimSuffix(remote.AgentName(pc.goos), remote.AgentName(pc.goos)) + "strata-vision", pc.pinned}
	if pc.goos == "windows" {
		encoders[1] = `bin\strata-vision.exe`
	}
	var out []settings.Remote
	for _, enc := range encoders {
		base := settings.Remote{Host: "laptop.local", User: "ana", OS: pc.goos, RemoteDir: pc.dir, EncoderPath: enc}
		for _, v := range []func(r *settings.Remote){
			func(r *settings.Remote) { r.GPUs = one },
			func(r *settings.Remote) { r.GPUs = two },
			func(r *settings.Remote) { r.GPUs, r.CUDADevice = two, idx(0) },
			func(r *settings.Remote) { r.GPUs, r.CUDADevice, r.MaxTokens, r.IdleStopS = two, idx(1), 512, 300 },
			func(r *settings.Remote) { r.GPUs, r.Device = two, settings.DeviceGPU },
			func(r *settings.Remote) { r.NoGPU, r.Threads = true, 6 },
			func(r *settings.Remote) { r.GPUs, r.Device, r.Threads, r.IdleStopS = one, settings.DeviceCPU, 12, 60 },
			func(r *settings.Remote) { r.CUDADevice = idx(3) }, // chosen before prepare listed the GPUs
		} {
			r := base
			v(&r)
			out = append(out, r)
		}
	}
	return out
}

// contractStrataArgs are encoder argument lists a Strata server passes:
// today's, newer ones (--min-tokens, --flash-attn), and 0-5 arguments of a
// later Strata with odd but legal values (spaces, quotes, shell and cmd.exe
// characters, non-ASCII, a value that reads like an option of the agent's).
func contractStrataArgs(goos string) [][]string {
	mm, model := "/home/u/Strata/models/mmproj-BF16.gguf", "/home/u/Strata/models/Qwen3-VL-IQ2_XS-00001-of-00003.gguf"
	if goos == "windows" {
		mm, model = `C:\Users\u\Strata\models\mmproj-BF16.gguf`, `C:\Users\u\Strata\models\Qwen3-VL-IQ2_XS-00001-of-00003.gguf`
	}
	base := []string{"--mmproj", mm, "--model", model}
	extras := [][]string{
		nil,
		{"--min-tokens", "64"},
		{"--flash-attn", "on"},
		{"--min-tokens", "256", "--flash-attn", "auto"},
		{"--future-switch"},
		{"--future", "a b  c", "--pct", "50%", "--amp", "a&b|c>d"},
		{"--quote", `it's "quoted"`, "--dollar", "$(id)`id`", "--semi", "x; rm -rf ~"},
		{"--unicode", "größe 画像", "--smuggle", "x --dir /etc --scratch /", "--backslash", `C:\temp\ \"`},
		{"--min-tokens", "64", "--flash-attn", "on", "--a", "1", "--b", "%PATH%", "--c"},
	}
	var out [][]string
	for _, x := range extras {
		for _, own := range [][]string{nil, {"--gpu", "--threads", "8", "--max-tokens", "1024"}} {
			args := append(append(append([]string{}, base...), own...), x...)
			out = append(out, args)
		}
	}
	return out
}

func TestRelayGateAndAgentAgreeOnEveryCommandLine(t *testing.T) {
	cases := 0
	for _, pc := range contractPCs {
		pins := agentcmd.Gate{Encoder: pc.pinned}
		policy := agentcmd.Policy{OS: pc.goos, Self: pc.agentPath(), Pins: pins}
		for _, r := range contractRemotes(pc) {
			for _, strataArgs := range contractStrataArgs(pc.goos) {
				cases++
				name := fmt.Sprintf("%s %s enc=%q gpus=%d cuda=%v dev=%q / %q", pc.goos, pc.dir, r.EncoderPath, len(r.GPUs), r.CUDADevice, r.Device, strataArgs[4:])
				sa, err := relay.ParseStrataArgs(strataArgs)
				if err != nil {
					t.Fatalf("%s: Strata's arguments: %v", name, err)
				}
				a := remote.AgentArgsFor(r, sa.Mmproj, sa.Model, sa.Extra)
				line, err := a.Command()
				if err != nil {
					t.Errorf("%s: the relay cannot build its line: %v", name, err)
					continue
				}
				// The gate: split as that PC's program gets it, parse, admit.
				argv, err := agentcmd.Split(pc.goos, line)
				if err != nil {
					t.Errorf("%s: the gate cannot split %q: %v", name, line, err)
					continue
				}
				c, err := agentcmd.Parse(argv)
				if err != nil {
					t.Errorf("%s: the gate cannot parse %q: %v", name, line, err)
					continue
				}
				admitted, err := policy.Admit(c)
				if err != nil {
					t.Errorf("%s: the gate refuses the relay's own line %q: %v", name, line, err)
					continue
				}
				if pc.goos == runtime.GOOS {
					got, err := agent.GateCheck(line, pc.agentPath(), pins)
					if err != nil || !reflect.DeepEqual(got, admitted.Args()) {
						t.Errorf("%s: the real gate runs %q (%v), the policy %q", name, got, err, admitted.Args())
					}
				}
				// The agent: its own parser over what the gate runs.
				back, err := agentcmd.ParseArgs(admitted.Args())
				if err != nil {
					t.Errorf("%s: the agent cannot parse what the gate runs %q: %v", name, admitted.Args(), err)
					continue
				}
				cfg := agent.ConfigFrom(back.Agent)
				d := remote.RemoteDevice(r)
				wantEnc := remotecmd.Join(pc.goos, pc.dir, a.Encoder)
				if r.EncoderPath == pc.pinned {
					wantEnc = pc.pinned
				}
				rm, rmodel := remote.RemoteFiles(sa.Mmproj, sa.Model)
				want := agent.Config{
					Encoder: wantEnc, Mmproj: remotecmd.Join(pc.goos, pc.dir, rm), Model: remotecmd.Join(pc.goos, pc.dir, rmodel),
					GPU: d.GPU, Threads: d.Threads, MaxTokens: d.MaxTokens, IdleStop: cfg.IdleStop, CUDADevice: -1, ExtraArgs: cfg.ExtraArgs,
				}
				if idx := d.CUDAIndex(); idx != nil && d.GPU {
					want.CUDADevice, want.CUDADeviceSet = *idx, true
				}
				if int(cfg.IdleStop.Seconds()) != r.IdleStopS {
					t.Errorf("%s: idle stop %v, the record says %d s", name, cfg.IdleStop, r.IdleStopS)
				}
				if !reflect.DeepEqual(cfg, want) {
					t.Errorf("%s: the agent runs\n %+v\nthe relay meant\n %+v", name, cfg, want)
				}
				// Strata's other arguments reach the encoder exactly, as data.
				if strings.Join(cfg.ExtraArgs, "\x00") != strings.Join(sa.Extra, "\x00") {
					t.Errorf("%s: the encoder gets %q, Strata passed on %q", name, cfg.ExtraArgs, sa.Extra)
				}
				if d.GPU != (cfg.GPU) || (r.CUDADevice != nil && d.GPU && (!cfg.CUDADeviceSet || cfg.CUDADevice != *r.CUDADevice)) {
					t.Errorf("%s: device: gpu %v cuda %d/%v", name, cfg.GPU, cfg.CUDADevice, cfg.CUDADeviceSet)
				}
				// The same line with something more is refused.
				for _, h := range hostileTails(pc.goos) {
					bad := line + " " + h
					if argv, err := agentcmd.Split(pc.goos, bad); err == nil {
						if c, err := agentcmd.Parse(argv); err == nil {
							if got, err := policy.Admit(c); err == nil {
								t.Errorf("%s: the gate admits %q as %q", name, bad, got.Args())
							}
						}
					}
					if pc.goos == runtime.GOOS {
						if got, err := agent.GateCheck(bad, pc.agentPath(), pins); err == nil {
							t.Errorf("%s: the real gate admits %q as %q", name, bad, got)
						}
					}
					cases++
				}
			}
		}
	}
	t.Logf("%d command lines and hostile variants checked", cases)
	if cases < 1000 {
		t.Errorf("only %d cases: the generator lost its rows", cases)
	}
}

// hostileTails are what a key thief (or a confused relay) adds to a line the
// relay built: shell syntax, options of the agent's that only tests and
// hand runs may use, files and programs outside the agent's folder, a
// program not pinned at pairing, smuggled encoder options, bad values.
func hostileTails(goos string) []string {
	enc := func(args ...string) string { return "--encoder-args " + agentcmd.EncodeArgs(args) }
	tails := []string{
		"--dir /home/ana/.ssh", "--scratch /", "--encoder /bin/sh", "--mmproj /etc/shadow", "--model /etc/shadow",
		"--install-sha256 " + strings.Repeat("ab", 32), "--threads 4x", "--threads -1", "--cuda-device 99", "--cuda-device x",
		enc("--mmproj", "/etc/shadow"), enc("--model=/etc/shadow"), enc("--gpu"), "--encoder-args !!!", "--encoder-args W10x",
		"--nvidia-smi /bin/sh", "positional", "--", "-", "--gpu=1", "--idle-stop 99999999999",
	}
	if remotecmd.Windows(goos) {
		return append(tails, "& calc", "| whoami", "%COMSPEC%", "^& calc", "> C:\\x", "--mmproj C:\\Windows\\win.ini", "--encoder \\\\evil\\share\\x.exe")
	}
	return append(tails, "; id", "$(id)", "`id`", "| sh", "> /tmp/x", "&& id", "--encoder ../../../bin/sh")
}

// A record or a file name holding shell syntax never becomes a line.
func TestRelayRefusesToBuildAHostileLine(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, dir := range []string{"/x;id", "/x$(id)", `C:\x & calc`, "-oProxyCommand=x", "/x\nid"} {
			a := remote.AgentArgsFor(settings.Remote{OS: goos, RemoteDir: dir}, "/m/mmproj.gguf", "/m/model.gguf", nil)
			if line, err := a.Command(); err == nil {
				t.Errorf("%s %q: built %q", goos, dir, line)
			}
		}
	}
}
