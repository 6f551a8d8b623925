//go:build linux

package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// The stand-in encoder's modelled device time (internal/fakeencoder): on the
// CPU 2 ms per image token over the threads; on a GPU 40 tokens per ms, and
// a warm-up of 150 ms plus one picture before READY.
func cpuModel(tokens, threads int) time.Duration {
	return time.Duration(2*tokens) * time.Millisecond / time.Duration(threads)
}

func standin(t *testing.T) string {
	return testenv.Program(t, "../fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Name: "strata-vision"})
}

// phases records the progress a trial reported.
type phases struct {
	mu   sync.Mutex
	seen []Phase
	last Progress
}

func (p *phases) add(pr Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = pr
	if len(p.seen) == 0 || p.seen[len(p.seen)-1] != pr.Phase {
		p.seen = append(p.seen, pr.Phase)
	}
}

func (p *phases) now() Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.Phase
}

// leftNothing checks the trial's temp folder is gone and no program it
// started runs.
func leftNothing(t *testing.T, tr *Trial) {
	t.Helper()
	ents, _ := os.ReadDir(tr.TempDir)
	if len(ents) > 0 {
		t.Errorf("the trial left %d entries in its temp folder (%s...)", len(ents), ents[0].Name())
	}
	if ps := running(tr.Exe); len(ps) > 0 {
		t.Errorf("still running after the trial: %q", ps)
	}
}

// running lists the processes whose command line has s.
func running(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestCPUTrialMeasuresTheModelledTime: this PC's CPU at the settings the
// product uses (2 threads, 300 tokens): the stand-in takes 2 ms x 300 / 2
// = 300 ms per picture; the measured figure is that plus the protocol's
// small cost, and the start is apart from it.
func TestCPUTrialMeasuresTheModelledTime(t *testing.T) {
	in := newInstall(t, standin(t), false)
	tr, err := CPU(in.inputs(t, &settings.Settings{CPUThreads: 2}))
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir = t.TempDir()
	var ph phases
	res, err := Run(context.Background(), tr, ph.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU, 2 threads, 300 tokens: picture %.2f s, start %.2f s, trial %.2f s (modelled %s per picture)", res.PictureSeconds, res.StartSeconds, res.TrialSeconds, cpuModel(300, 2))
	model := cpuModel(300, 2).Seconds()
	if res.PictureSeconds < model-0.01 || res.PictureSeconds > model+5 {
		t.Errorf("picture %.2f s, the stand-in models %.2f s", res.PictureSeconds, model)
	}
	if res.Tokens != 300 || res.Device != "this PC's CPU, 2 threads" || res.StrataVersion != "0.9.3" || res.When.IsZero() || res.Note != "" {
		t.Errorf("result %+v", res)
	}
	if res.StartSeconds >= res.PictureSeconds+5 {
		t.Errorf("start %.2f s: the CPU encoder has no warm-up", res.StartSeconds)
	}
	if len(ph.seen) < 2 || ph.seen[0] != PhaseStarting || ph.seen[1] != PhaseReading {
		t.Errorf("progress phases %v", ph.seen)
	}
	rec := res.Record()
	if rec.Check() != nil || rec.PictureS != res.PictureSeconds || rec.StrataVersion != "0.9.3" {
		t.Errorf("record %+v: %v", rec, rec.Check())
	}
	leftNothing(t, tr)
}

// TestGPUTrialHoldsItsStartApart: this PC's GPU (the stand-in nvidia-smi's
// RTX 3060): the warm-up (150 ms + one 1024-token picture) is the start,
// the picture itself 1024 / 40 ms. Without a driver the encoder reads on
// the CPU, and the result says it is no GPU figure.
func TestGPUTrialHoldsItsStartApart(t *testing.T) {
	in := newInstall(t, standin(t), true)
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	t.Setenv("PATH", smi+string(os.PathListSeparator)+os.Getenv("PATH"))
	inp := in.inputs(t, nil)
	inp.GPUs = []probe.GPU{{Index: 0, Vendor: probe.VendorNVIDIA, Source: probe.SourceNvidiaSMI, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144, FreeMiB: 5700, Driver: "581.57", ComputeCap: "8.6"}}
	tr, err := GPU(inp)
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir = t.TempDir()
	res, err := Run(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU: picture %.2f s, start %.2f s (modelled 0.03 s and 0.18 s)", res.PictureSeconds, res.StartSeconds)
	if res.Tokens != 1024 || res.Note != "" || res.StartSeconds < 0.17 || res.PictureSeconds > 5 {
		t.Errorf("result %+v", res)
	}
	// The VRAM claim went with the encoder.
	if ents, _ := os.ReadDir(filepath.Join(smi, "nvidia-smi.claims")); len(ents) > 0 {
		t.Errorf("the encoder's VRAM claim is still there: %v", ents)
	}
	leftNothing(t, tr)

	testenv.SetGPUs(t, smi, []string{}) // the driver finds no GPU: CUDA fails, the CPU reads it
	res, err = Run(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Note, "not a GPU figure") {
		t.Errorf("a picture read on the CPU passed as a GPU figure: %+v", res)
	}
}

// TestEncoderThatDoesNotStart: a projector the encoder cannot load gives
// its own first line as the reason.
func TestEncoderThatDoesNotStart(t *testing.T) {
	in := newInstall(t, standin(t), false)
	os.WriteFile(in.mmproj, []byte("not a gguf"), 0o644)
	tr, err := CPU(in.inputs(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir = t.TempDir()
	_, err = Run(context.Background(), tr, nil)
	if KindOf(err) != KindDidNotStart || !strings.Contains(err.Error(), "cannot load the vision encoder "+in.mmproj) {
		t.Errorf("got %s: %v", KindOf(err), err)
	}
	leftNothing(t, tr)
}

// TestBoundStopsAHungStart: an encoder that never says READY is stopped at
// the bound, which the message says.
func TestBoundStopsAHungStart(t *testing.T) {
	in := newInstall(t, standin(t), false)
	t.Setenv("STRATA_STANDIN_START_MS", "60000")
	tr, err := CPU(in.inputs(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir, tr.Bound = t.TempDir(), time.Second
	t0 := time.Now()
	_, err = Run(context.Background(), tr, nil)
	took := time.Since(t0)
	t.Logf("bound 1 s: ended after %s", took.Round(time.Millisecond))
	if KindOf(err) != KindTimeout || !strings.Contains(err.Error(), "after 1 second while the encoder was starting") {
		t.Errorf("got %s: %v", KindOf(err), err)
	}
	if took > 15*time.Second {
		t.Errorf("the bound of 1 s took %s", took)
	}
	leftNothing(t, tr)
}

// TestCancelStopsTheEncoderAtOnce: Cancel in the middle of a picture ends
// the encoder (it would take a minute) and leaves nothing.
func TestCancelStopsTheEncoderAtOnce(t *testing.T) {
	in := newInstall(t, standin(t), false)
	t.Setenv("STRATA_STANDIN_ENCODE_MS", "60000")
	tr, err := CPU(in.inputs(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var ph phases
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, tr, ph.add); done <- err }()
	testenv.WaitFor(t, 20*time.Second, "the picture to be read", func() bool { return ph.now() == PhaseReading })
	t0 := time.Now()
	cancel()
	err = testenv.Receive(t, done, 15*time.Second, "the trial to end after Cancel")
	t.Logf("Cancel to the trial's end: %s", time.Since(t0).Round(time.Millisecond))
	if KindOf(err) != KindCanceled || !strings.Contains(err.Error(), "cancelled while the picture was read") {
		t.Errorf("got %s: %v", KindOf(err), err)
	}
	leftNothing(t, tr)
}

// secondPC is a real sshd on loopback playing a second PC prepared by
// `remote prepare`: the built relay as its agent, the stand-in as its
// strata-vision, the projector and the vocabulary stub in its folder.
type secondPC struct {
	sshd     *testenv.SSHD
	dir      string
	relayBin string
	remote   settings.Remote
}

func newSecondPC(t *testing.T, in install, rm settings.Remote) *secondPC {
	t.Helper()
	dir := t.TempDir()
	relayBin := testenv.Program(t, "../../relay", testenv.BuildOptions{Name: "strata-vision-relay"})
	enc := standin(t)
	rmm, rmodel := remote.RemoteFiles(in.mmproj, in.model)
	for _, c := range []struct {
		from, to string
		mode     os.FileMode
	}{{in.mmproj, rmm, 0o644}, {in.model, rmodel, 0o644}, {relayBin, "strata-vision-relay", 0o755}, {enc, "strata-vision", 0o755}} {
		if err := testenv.CopyFile(c.from, filepath.Join(dir, c.to), c.mode); err != nil {
			t.Fatal(err)
		}
	}
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{})
	rm.Host, rm.Port, rm.User = sshd.Host, sshd.Port, sshd.User
	rm.HostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostSigner.PublicKey())))
	rm.KeyFile, rm.RemoteDir = sshd.ClientKeyFile, dir
	return &secondPC{sshd: sshd, dir: dir, relayBin: relayBin, remote: rm}
}

func (p *secondPC) trial(t *testing.T, in install) *Trial {
	t.Helper()
	inp := in.inputs(t, &settings.Settings{Vision: settings.PlacementCPU, Remote: &p.remote})
	inp.RelayExe = p.relayBin
	tr, err := Remote(inp)
	if err != nil {
		t.Fatal(err)
	}
	tr.TempDir = t.TempDir()
	return tr
}

// running lists the second PC's running programs from its folder (the
// agent and its strata-vision).
func (p *secondPC) running() []string { return running(p.dir) }

// TestSecondPCTrialThroughTheRelayIntegration: the second PC (no GPU there, as
// prepare records it: its CPU, 1 thread, 300 tokens: 600 ms a picture)
// through the built relay and a real sshd with the paired key. The start
// (connection, agent, encoder) is held apart from the picture.
func TestSecondPCTrialThroughTheRelayIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	in := newInstall(t, standin(t), false)
	pc := newSecondPC(t, in, settings.Remote{NoGPU: true, Threads: 1})
	tr := pc.trial(t, in)
	var ph phases
	res, err := Run(context.Background(), tr, ph.add)
	if err != nil {
		t.Fatal(err)
	}
	model := cpuModel(300, 1).Seconds()
	t.Logf("second PC over loopback ssh (its CPU, 1 thread): picture %.2f s, start %.2f s, trial %.2f s (modelled %.2f s per picture)", res.PictureSeconds, res.StartSeconds, res.TrialSeconds, model)
	if res.PictureSeconds < model-0.01 || res.PictureSeconds > model+5 {
		t.Errorf("picture %.2f s, the stand-in models %.2f s", res.PictureSeconds, model)
	}
	if res.Tokens != 300 || res.Host != pc.remote.Host || res.Placement != settings.PlacementRemote {
		t.Errorf("result %+v", res)
	}
	leftNothing(t, tr)
	testenv.WaitFor(t, 10*time.Second, "the second PC's agent and encoder to end", func() bool { return len(pc.running()) == 0 })
}

// TestSecondPCBadCasesIntegration: the second PC off (its ssh server stopped), and a
// Cancel in the middle of a picture there (a picture of 20000 tokens on 1
// thread would take 40 s): each a clear sentence, nothing left on either PC.
func TestSecondPCBadCasesIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	in := newInstall(t, standin(t), false)
	pc := newSecondPC(t, in, settings.Remote{NoGPU: true, Threads: 1, MaxTokens: 20000})

	t.Run("cancel", func(t *testing.T) {
		tr := pc.trial(t, in)
		ctx, cancel := context.WithCancel(context.Background())
		var ph phases
		done := make(chan error, 1)
		go func() { _, err := Run(ctx, tr, ph.add); done <- err }()
		testenv.WaitFor(t, 20*time.Second, "the second PC's encoder to run", func() bool {
			return ph.now() == PhaseReading && len(pc.running()) >= 2
		})
		t0 := time.Now()
		cancel()
		err := testenv.Receive(t, done, 15*time.Second, "the trial to end after Cancel")
		t.Logf("Cancel to the trial's end (second PC): %s", time.Since(t0).Round(time.Millisecond))
		if KindOf(err) != KindCanceled {
			t.Errorf("got %s: %v", KindOf(err), err)
		}
		leftNothing(t, tr)
		testenv.WaitFor(t, 10*time.Second, "the second PC's agent and encoder to end", func() bool { return len(pc.running()) == 0 })
	})

	t.Run("off", func(t *testing.T) {
		pc.sshd.Stop()
		tr := pc.trial(t, in)
		_, err := Run(context.Background(), tr, nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindSecondPC || !strings.Contains(e.Msg, "the second PC did not read the trial picture: second PC 127.0.0.1") {
			t.Errorf("got %v", err)
		}
		t.Logf("second PC off: %v", err)
		leftNothing(t, tr)
	})
}
