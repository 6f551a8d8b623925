//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// gateKey makes the rig's key agent-only, as `remote pair` installs it by
// default: sshd forces the agent's gate (the real program in the second
// PC's folder), whatever the relay asks for.
func (g *rig) gateKey() {
	t := g.t
	gate, err := agentcmd.Command{Program: filepath.Join(g.remoteDir, "strata-vision-relay"), Verb: agentcmd.VerbGate,
		Gate: agentcmd.Gate{Keys: g.sshd.AuthorizedKeysFile}}.Quote("linux")
	if err != nil {
		t.Fatal(err)
	}
	line := `restrict,command="` + strings.ReplaceAll(gate, `"`, `\"`) + `" ` + string(ssh.MarshalAuthorizedKey(g.sshd.ClientSigner.PublicKey()))
	if err := os.WriteFile(g.sshd.AuthorizedKeysFile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

// encoderOnSecondPC is the second PC's encoder process: its arguments and
// environment (from /proc).
func (g *rig) encoderOnSecondPC() (args []string, env []string) {
	for _, p := range g.remoteProcs() {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); filepath.Base(exe) == "standin-bin" {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			e, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
			return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), strings.Split(string(e), "\x00")
		}
	}
	return nil, nil
}

// TestSecondPCContractThroughTheGateIntegration: the second-PC path as a user has it
// with a newer Strata and a two-GPU second PC: the default (agent-only) key,
// so every line the relay sends goes through the real gate over a real sshd;
// Strata passes --min-tokens, --flash-attn and an argument of a later
// version; the user chose the second GPU (cuda_device 1). Pictures are read
// on that GPU (the card CUDA uses is the one nvidia-smi names: PCI bus
// order), byte-identical to the encoder's own result; the argument the
// encoder refuses is dropped with a note; then the same through the second
// PC's CPU settings.
func TestSecondPCContractThroughTheGateIntegration(t *testing.T) {
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, []string{"NVIDIA GeForce RTX 3050,8192", "NVIDIA GeForce RTX 4090,24564"})
	g := newRig(t, testenv.SSHDOptions{PathDirs: []string{smi}}, "")
	g.gateKey()
	one := 1
	g.st.Remote.NoGPU = false
	g.st.Remote.GPUs = []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3050", TotalMiB: 8192}, {Index: 1, Name: "NVIDIA GeForce RTX 4090", TotalMiB: 24564}}
	g.st.Remote.CUDADevice = &one
	g.save()
	g.start("--min-tokens", "64", "--flash-attn", "on", "--a-future-flag", "a b&c")

	l, data, got, took := g.picture()
	if !strings.HasPrefix(l, fmt.Sprintf("OK %d ", rigTokens)) {
		b, _ := os.ReadFile(g.engineLog)
		t.Fatalf("a picture through the gate with newer arguments: %q\nengine log:\n%s", l, b)
	}
	t.Logf("first picture through the gate (agent start, encoder warm-up): %v", took)
	g.checkSVE("gpu 1", got, data)
	args, env := g.encoderOnSecondPC()
	if !slices.Contains(args, "--gpu") || !slices.Contains(args, "--flash-attn") || slices.Contains(args, "--min-tokens") || slices.Contains(args, "--a-future-flag") {
		t.Errorf("the second PC's encoder runs as %q: want --gpu, --flash-attn on, and the arguments it refuses dropped", args)
	}
	if !slices.Contains(env, "CUDA_VISIBLE_DEVICES=1") || !slices.Contains(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID") {
		t.Errorf("the second PC's encoder environment lacks CUDA_VISIBLE_DEVICES=1 in PCI bus order: %q", slices.DeleteFunc(env, func(s string) bool { return !strings.HasPrefix(s, "CUDA") }))
	}
	ready := g.svc.waitFor(t, events.EncoderReady, 1, 10*time.Second)
	if r := events.Get[events.EncoderReadyDetails](ready); r.Device != "gpu" || r.GPU != "NVIDIA GeForce RTX 4090" {
		t.Errorf("vision.ready %v: want the second GPU (RTX 4090) by name", ready.Details)
	}
	if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("a second picture: %q", l)
	} else {
		g.checkSVE("gpu 1, again", got, data)
	}

	// The second PC's CPU, at the chosen threads, through the same gate.
	g.st.Remote.Device, g.st.Remote.Threads = settings.DeviceCPU, 3
	g.st.Vision = settings.PlacementOff // ends the agent session
	g.save()
	g.picture()
	g.st.Vision = settings.PlacementRemote
	g.save()
	if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		b, _ := os.ReadFile(g.engineLog)
		t.Fatalf("the second PC's CPU through the gate: %q\n%s", l, b)
	} else {
		g.checkSVE("cpu", got, data)
	}
	if args, _ := g.encoderOnSecondPC(); slices.Contains(args, "--gpu") || !slices.Contains(args, "--threads") || args[slices.Index(args, "--threads")+1] != "3" {
		t.Errorf("the second PC's CPU encoder runs as %q: want --threads 3 and no --gpu", args)
	}
	g.quit()
	b, _ := os.ReadFile(g.engineLog)
	if strings.Contains(string(b), "only runs the Strata Companion agent") {
		t.Errorf("the gate refused a line the relay built:\n%s", b)
	}
	if !strings.Contains(string(b), "--min-tokens") {
		t.Errorf("the engine log does not note the dropped --min-tokens:\n%s", b)
	}
	g.noStrataLines()
}
