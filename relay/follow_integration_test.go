//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
	"github.com/strata-companion/companion/internal/wol"
)

// builtBinaries builds the relay and the stand-in encoder (once per test
// binary: testenv.Program keeps the builds) into a folder of t's.
func builtBinaries(t *testing.T) (relayBin, standin string) {
	dir := t.TempDir()
	relayBin = testenv.Program(t, ".", testenv.BuildOptions{Name: "strata-vision-relay", Dir: dir})
	standin = testenv.Program(t, "../internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Name: "standin", Dir: dir})
	return relayBin, standin
}

// fakeService is the companion service's side of POST /v1/relay: it checks
// the relay's token and keeps what the relay reported.
type fakeService struct {
	mu     sync.Mutex
	events []events.Event
	nEmbd  int
}

func startFakeService(t *testing.T, home string) *fakeService {
	fs := &fakeService{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/relay" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer tok-123" {
			http.Error(w, `{"error":"no"}`, http.StatusUnauthorized)
			return
		}
		var rep controlapi.RelayReport
		if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
			return
		}
		fs.mu.Lock()
		fs.events = append(fs.events, rep.Events...)
		if rep.NEmbd > 0 {
			fs.nEmbd = rep.NEmbd
		}
		fs.mu.Unlock()
		w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	state := filepath.Join(home, "state")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, filepath.Base(locations.ControlAddrFile())), []byte(strings.TrimPrefix(srv.URL, "http://")), 0o600)
	// The relay presents the relay's own token (the service's relay-token),
	// never the read token every account may read.
	os.WriteFile(filepath.Join(state, filepath.Base(locations.ControlTokenFile())), []byte("tok-read\n"), 0o644)
	os.WriteFile(filepath.Join(state, filepath.Base(locations.RelayTokenFile())), []byte("tok-123\n"), 0o600)
	return fs
}

func (fs *fakeService) all() []events.Event {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]events.Event(nil), fs.events...)
}

func (fs *fakeService) count(k events.Kind) int {
	n := 0
	for _, e := range fs.all() {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// waitFor waits until n events of kind k arrived and returns the last.
func (fs *fakeService) waitFor(t *testing.T, k events.Kind, n int, within time.Duration) events.Event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var last events.Event
		c := 0
		for _, e := range fs.all() {
			if e.Kind == k {
				c++
				last = e
			}
		}
		if c >= n {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d %s events within %s; events: %v", c, k, within, fs.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rig is Strata's side (its mmproj, model, config env, engine log) and a
// second PC (a real sshd and a folder as `remote prepare` leaves it).
type rig struct {
	t            *testing.T
	root, tmp    string
	mmproj       string
	model        string
	remoteDir    string
	standin      string
	sshd         *testenv.SSHD
	settingsFile string
	st           *settings.Settings
	svc          *fakeService
	engineLog    string
	home         string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	n     int
}

const rigTokens, rigEmbd = 6, 32

func newRig(t *testing.T, sshdOpts testenv.SSHDOptions, remoteEnv string) *rig {
	if testing.Short() {
		t.Skip("builds the relay and starts a real sshd")
	}
	relayBin, standin := builtBinaries(t)
	g := &rig{t: t, root: t.TempDir(), tmp: t.TempDir(), remoteDir: t.TempDir(), home: t.TempDir(), standin: standin}
	g.mmproj, g.model = filepath.Join(g.root, "mmproj-BF16.gguf"), filepath.Join(g.root, "model-00001-of-00003.gguf")
	fakeencoder.WriteMmproj(g.mmproj, rigEmbd)
	fakeencoder.WriteModel(g.model, 20)
	rm, rmodel := remote.RemoteFiles(g.mmproj, g.model)
	cp := func(from, to string, mode os.FileMode) {
		if err := testenv.CopyFile(from, to, mode); err != nil {
			t.Fatal(err)
		}
	}
	cp(g.mmproj, filepath.Join(g.remoteDir, rm), 0o644)
	cp(g.model, filepath.Join(g.remoteDir, rmodel), 0o644)
	cp(relayBin, filepath.Join(g.remoteDir, "strata-vision-relay"), 0o755)
	cp(standin, filepath.Join(g.remoteDir, "standin-bin"), 0o755)
	testenv.WriteExecutable(filepath.Join(g.remoteDir, "strata-vision"), []byte("#!/bin/sh\n"+remoteEnv+" exec "+filepath.Join(g.remoteDir, "standin-bin")+" \"$@\"\n"))
	g.sshd = testenv.StartSSHD(t, sshdOpts)
	// As prepare leaves it on a PC without an NVIDIA GPU (tests that give
	// it one say so), with the image tokens chosen small for speed.
	g.st = &settings.Settings{Vision: settings.PlacementRemote, LocalEncoder: standin, CPUMaxTokens: rigTokens, Remote: &settings.Remote{
		Host: g.sshd.Host, Port: g.sshd.Port, User: g.sshd.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(g.sshd.HostSigner.PublicKey()))),
		KeyFile:   g.sshd.ClientKeyFile,
		RemoteDir: g.remoteDir,
		NoGPU:     true, MaxTokens: rigTokens,
	}}
	g.settingsFile = filepath.Join(t.TempDir(), "settings.json")
	g.save()
	g.svc = startFakeService(t, g.home)
	g.engineLog = filepath.Join(g.root, "strata-test.log")
	return g
}

// save writes the settings as the service's backend does.
func (g *rig) save() {
	if err := g.st.Save(g.settingsFile); err != nil {
		g.t.Fatal(err)
	}
}

// start runs the relay exactly as Strata starts an encoder (extra: more
// arguments a newer Strata passes).
func (g *rig) start(extra ...string) {
	t := g.t
	relayBin, _ := builtBinaries(t)
	log, err := os.OpenFile(g.engineLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g.cmd = exec.Command(relayBin, append([]string{"--mmproj", g.mmproj, "--model", g.model, "--max-tokens", fmt.Sprint(rigTokens)}, extra...)...)
	g.cmd.Dir = g.root
	g.cmd.Env = append(os.Environ(), "STRATA_COMPANION_SETTINGS="+g.settingsFile, locations.EnvHome+"="+g.home)
	g.cmd.Stderr = log
	g.stdin, _ = g.cmd.StdinPipe()
	stdout, _ := g.cmd.StdoutPipe()
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.cmd.Process.Kill(); g.cmd.Wait() })
	g.out = bufio.NewReader(stdout)
	if l, _ := g.line(30 * time.Second); l != fmt.Sprintf("READY %d", rigEmbd) {
		t.Fatalf("first line %q", l)
	}
}

func (g *rig) line(within time.Duration) (string, time.Duration) {
	g.t.Helper()
	start := time.Now()
	got := make(chan string, 1)
	go func() { l, _ := g.out.ReadString('\n'); got <- strings.TrimSpace(l) }()
	select {
	case l := <-got:
		return l, time.Since(start)
	case <-time.After(within):
		g.t.Fatalf("no line within %s: the relay hung", within)
		return "", 0
	}
}

// picture sends one ENC as Strata does; it returns the reply, the bytes
// sent, the .sve's content and the time to the reply.
func (g *rig) picture() (string, []byte, []byte, time.Duration) {
	g.n++
	i := g.n
	data := append([]byte("\xff\xd8\xff\xe0JFIF"), bytes.Repeat([]byte{byte(i)}, 3000+i)...)
	name := fmt.Sprintf("%032x", i)
	img, sve := filepath.Join(g.tmp, name+".img"), filepath.Join(g.tmp, name+".sve")
	os.WriteFile(img, data, 0o600)
	fmt.Fprintf(g.stdin, "ENC %s %s\n", img, sve)
	l, d := g.line(60 * time.Second)
	os.Remove(img)
	got, _ := os.ReadFile(sve)
	os.Remove(sve)
	return l, data, got, d
}

// where waits for the n-th picture read (its outcome event says OK) and
// says where it was read.
func (g *rig) where(n int) string {
	g.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c := 0
		for _, e := range g.svc.all() {
			if p := events.Get[events.PictureEncodedDetails](e); e.Kind == events.PictureEncoded && isTrue(p.OK) {
				if c++; c == n {
					return p.Where
				}
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("only %d pictures read within 5 s; events: %v", c, g.svc.all())
		}
	}
}

// noStrataLines checks the engine log: the relay must never write a line
// there that Strata could take for the engine's last words.
func (g *rig) noStrataLines() {
	b, _ := os.ReadFile(g.engineLog)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "strata") || strings.HasPrefix(l, "ERR") {
			g.t.Errorf("the engine log has a relay line Strata would take for the engine's: %q", l)
		}
	}
}

func (g *rig) quit() {
	io.WriteString(g.stdin, "QUIT\n")
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			g.t.Fatalf("relay exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		g.t.Fatal("the relay did not exit within 5 s of QUIT")
	}
}

// remoteProcs lists processes running from the second PC's folder.
func (g *rig) remoteProcs() []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if exe, _ := os.Readlink(d + "/exe"); strings.HasPrefix(exe, g.remoteDir) {
			var pid int
			fmt.Sscan(filepath.Base(d), &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

func (g *rig) checkSVE(what string, got, data []byte) {
	g.t.Helper()
	if !bytes.Equal(got, fakeencoder.SVE(data, rigTokens, rigEmbd)) {
		g.t.Fatalf("%s: the .sve is not byte-identical to the stand-in's (%d bytes)", what, len(got))
	}
}

// TestPlacementFollowsTheSettingsInOneProcessIntegration: remote -> cpu -> off ->
// remote, switched by writing the settings (as the backend does), while one
// relay process serves every picture where the settings said at that moment.
func TestPlacementFollowsTheSettingsInOneProcessIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "")
	g.start()
	pid := g.cmd.Process.Pid
	steps := []struct {
		placement settings.Placement
		where     string
	}{
		{settings.PlacementRemote, events.WhereRemote},
		{settings.PlacementCPU, events.WhereLocalCPU},
		{settings.PlacementOff, ""},
		{settings.PlacementRemote, events.WhereRemote},
		{settings.PlacementCPU, events.WhereLocalCPU},
	}
	pictures := 0
	for i, s := range steps {
		g.st.Vision = s.placement
		t0 := time.Now()
		g.save() // what the backend does on a tray click
		for k := 0; k < 2; k++ {
			l, data, got, d := g.picture()
			if k == 0 {
				t.Logf("switch to %s: settings written to the first picture's reply %v", s.placement, time.Since(t0))
			}
			if s.placement == settings.PlacementOff {
				if l != relay.OffMessage {
					t.Fatalf("step %d (off): %q", i, l)
				}
				continue
			}
			if !strings.HasPrefix(l, fmt.Sprintf("OK %d ", rigTokens)) {
				b, _ := os.ReadFile(g.engineLog)
				t.Fatalf("step %d (%s): %q\n%s", i, s.placement, l, b)
			}
			g.checkSVE(string(s.placement), got, data)
			pictures++
			if w := g.where(pictures); w != s.where {
				t.Fatalf("step %d: the picture was read at %q, the settings said %s", i, w, s.placement)
			}
			t.Logf("%s: %v", s.placement, d)
		}
	}
	// The idle stop changed in the settings reaches the running agent.
	g.st.Vision = settings.PlacementRemote
	g.st.Remote.IdleStopS = 1
	g.save()
	if l, _, _, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("picture after the idle-stop change: %q", l)
	}
	g.svc.waitFor(t, events.EncoderIdleStopped, 1, 10*time.Second)
	if g.cmd.Process.Pid != pid {
		t.Fatal("the relay's pid changed")
	}
	g.quit()
	if g.svc.nEmbd != rigEmbd {
		t.Errorf("n_embd reported to the service = %d, want %d", g.svc.nEmbd, rigEmbd)
	}
	if s, _ := settings.Load(g.settingsFile); s.Remote.NEmbd != 0 {
		t.Errorf("the relay wrote n_embd %d into the settings; that is the service's job", s.Remote.NEmbd)
	}
	g.noStrataLines()
}

// TestSecondPCDownFallsBackAndReturnsIntegration: with the fallback on, a picture while
// the second PC is off is read on this PC's CPU (byte-identical), with one
// fallback event; when the PC answers again, the next picture goes there.
// With the fallback off, a picture while it is known down gets ERR at once:
// the times are logged against a picture on the live link (no assertion).
func TestSecondPCDownFallsBackAndReturnsIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "")
	on := true
	g.st.FallbackCPU = &on
	g.save()
	g.start()
	var live []time.Duration
	for i := 0; i < 3; i++ {
		l, data, got, d := g.picture()
		if !strings.HasPrefix(l, "OK ") {
			t.Fatalf("live picture: %q", l)
		}
		g.checkSVE("live", got, data)
		live = append(live, d)
	}
	g.sshd.Stop()
	g.svc.waitFor(t, events.RemoteDisconnected, 1, 10*time.Second)
	for i := 0; i < 3; i++ {
		l, data, got, d := g.picture()
		if !strings.HasPrefix(l, "OK ") {
			t.Fatalf("picture with the second PC off and the fallback on: %q", l)
		}
		g.checkSVE("fallback", got, data)
		if w := g.where(3 + i + 1); w != events.WhereFallbackCPU {
			t.Fatalf("picture %d with the PC off was read at %q", i, w)
		}
		t.Logf("fallback picture %d: %v", i, d)
	}
	if n := g.svc.count(events.VisionFallback); n != 1 {
		t.Fatalf("%d fallback events for one outage, want 1", n)
	}
	// Known down, fallback off: ERR at once.
	off := false
	g.st.FallbackCPU = &off
	g.save()
	var down []time.Duration
	for i := 0; i < 3; i++ {
		l, _, _, d := g.picture()
		if !strings.HasPrefix(l, "ERR second PC ") || !strings.Contains(l, "text still works") {
			t.Fatalf("picture while known down, fallback off: %q", l)
		}
		down = append(down, d)
	}
	t.Logf("ERR while known down: %v; live pictures: %v; ratio of medians %.3f", down, live, float64(medianOf(down))/float64(medianOf(live)))
	g.st.FallbackCPU = &on
	g.save()
	// Its ssh server back: a refused connection was quick to find, so it
	// was not kept as known down; the very next picture goes there.
	g.sshd.Start()
	l, data, got, d := g.picture()
	if !strings.HasPrefix(l, "OK ") {
		t.Fatalf("the first picture after the second PC came back: %q", l)
	}
	t.Logf("the first picture after sshd came back: %v", d)
	g.svc.waitFor(t, events.RemoteReachable, 1, 10*time.Second)
	g.checkSVE("back", got, data)
	if w := g.where(7); w != events.WhereRemote {
		t.Fatalf("after the second PC answered again the picture was read at %q", w)
	}
	g.quit()
	g.noStrataLines()
}

// pictureThere waits until an agent of the rig's second PC holds a picture
// in its scratch folder (it is there from its arrival until its reply) and
// returns that agent's pid.
func (g *rig) pictureThere() int {
	g.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for _, pid := range g.remoteProcs() {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) != "strata-vision-relay" {
				continue
			}
			if m, _ := filepath.Glob(filepath.Join(tempDirOf(pid), fmt.Sprintf("strata-vision-relay-%d-*", pid), "*.img")); len(m) > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(g.engineLog)
			g.t.Fatalf("no picture reached an agent on the second PC within 20 s; engine log:\n%s", b)
		}
	}
}

// tempDirOf is the temp folder of process pid as os.TempDir finds it there:
// its own TMPDIR, else /tmp. An agent started by sshd has sshd's
// environment, not this test's (make test sets a TMPDIR of its own).
func tempDirOf(pid int) string {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && v != "" {
			return v
		}
	}
	return "/tmp"
}

func medianOf(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// TestHungAgentQuitEndsEverythingIntegration: the agent is stopped (SIGSTOP) while a
// picture is in flight; QUIT gets the picture's ERR line, the relay exits,
// and no process of the second PC is left (at once; stopBound allowed).
func TestHungAgentQuitEndsEverythingIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "STRATA_STANDIN_ENCODE_MS=20000")
	g.start()
	img := filepath.Join(g.tmp, "hung.img")
	os.WriteFile(img, []byte("\x89PNG\r\n\x1a\nxxxxxxxx"), 0o600)
	fmt.Fprintf(g.stdin, "ENC %s %s\n", img, strings.TrimSuffix(img, ".img")+".sve")
	var agentPID int
	deadline := time.Now().Add(20 * time.Second)
	for agentPID == 0 {
		for _, pid := range g.remoteProcs() {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) == "strata-vision-relay" {
				agentPID = pid
			}
		}
		if len(g.remoteProcs()) >= 2 && agentPID != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent and its encoder did not start")
		}
		agentPID = 0
		time.Sleep(20 * time.Millisecond)
	}
	if p := g.pictureThere(); p != agentPID { // the picture is with the agent now
		t.Fatalf("the picture is with agent %d, not %d", p, agentPID)
	}
	if err := syscall.Kill(agentPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	io.WriteString(g.stdin, "QUIT\n")
	l, _ := g.line(stopBound)
	if !strings.HasPrefix(l, "ERR ") {
		t.Fatalf("the picture in flight got %q at QUIT", l)
	}
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
		t.Logf("the relay exited %v after QUIT", time.Since(t0))
	case <-time.After(stopBound):
		t.Fatal("the relay did not exit within 2 s of QUIT with a hung agent")
	}
	last := ""
	for len(g.remoteProcs()) > 0 {
		now := ""
		for _, p := range g.remoteProcs() {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			f := strings.Fields(string(b))
			if len(f) > 4 {
				now += fmt.Sprintf("%d:%s ppid %s; ", p, f[2], f[3])
			}
		}
		if now != last {
			t.Logf("%v after QUIT: %s", time.Since(t0), now)
			last = now
		}
		if time.Since(t0) > stopBound {
			syscall.Kill(agentPID, syscall.SIGKILL)
			b, _ := os.ReadFile(g.sshd.LogFile)
			t.Logf("sshd log:\n%s", b)
			t.Fatalf("processes of the second PC still run %v after QUIT: %v", stopBound, g.remoteProcs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("QUIT answered and everything gone in %v", time.Since(t0))
	g.noStrataLines()
}

// listenInNetns opens a UDP socket inside the namespace: the "second PC's"
// network card, where the magic packet must arrive.
func listenInNetns(t *testing.T, ns string, port int) net.PacketConn {
	type res struct {
		pc  net.PacketConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // the thread stays in its namespace if we cannot switch back: never unlocked then
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- res{nil, err}
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- res{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{nil, err}
			return
		}
		pc, lerr := net.ListenPacket("udp4", fmt.Sprintf("0.0.0.0:%d", port))
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		ch <- res{pc, lerr}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listening in the namespace: %v", r.err)
	}
	t.Cleanup(func() { r.pc.Close() })
	return r.pc
}

// TestWakeOnLANThenPictureIntegration: the second PC sleeps in a network namespace;
// its "network card" starts sshd only when the magic packet for the
// recorded MAC arrives; the picture succeeds within the wait.
func TestWakeOnLANThenPictureIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces")
	}
	ns := testenv.NewNetns(t, testenv.NetnsOptions{})
	g := newRig(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr}, "")
	g.sshd.Stop() // asleep
	const mac = "02:00:5e:10:20:30"
	bcast := ns.PeerAddr[:strings.LastIndexByte(ns.PeerAddr, '.')] + ".255"
	g.st.Remote.MAC = mac
	g.st.Remote.Wake = &settings.Wake{Enabled: true, Broadcast: bcast, WaitS: 30}
	g.save()
	pc := listenInNetns(t, ns.Name, wol.DefaultPort)
	woke := make(chan string, 1)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if got, ok := wol.IsMagicPacket(buf[:n]); ok {
				woke <- got.String()
				return
			}
		}
	}()
	g.start()
	select {
	case m := <-woke:
		t.Fatalf("a magic packet (%s) came before any picture", m)
	case <-time.After(500 * time.Millisecond):
	}
	started := make(chan struct{})
	go func() {
		select {
		case m := <-woke:
			if m != mac {
				t.Errorf("magic packet for %s, want %s", m, mac)
				return
			}
			g.sshd.Start()
			close(started)
		case <-time.After(30 * time.Second):
		}
	}()
	l, data, got, d := g.picture()
	select {
	case <-started:
	default:
		t.Fatalf("the picture was answered %q before the magic packet woke the PC", l)
	}
	if !strings.HasPrefix(l, "OK ") {
		t.Fatalf("picture after the wake: %q", l)
	}
	g.checkSVE("after wake", got, data)
	t.Logf("picture answered %v after ENC, through the wake", d)
	if w := g.where(1); w != events.WhereRemote {
		t.Fatalf("read at %q", w)
	}
	g.svc.waitFor(t, events.RemoteWake, 2, 5*time.Second)
	// 100 pictures, then a failover: still no relay line in the engine log.
	for i := 0; i < 100; i++ {
		if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
			t.Fatalf("picture %d: %q", i, l)
		} else {
			g.checkSVE("picture", got, data)
		}
	}
	on := true
	g.st.FallbackCPU = &on
	g.save()
	g.sshd.Stop()
	g.svc.waitFor(t, events.RemoteDisconnected, 1, 10*time.Second)
	if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("failover picture: %q", l)
	} else {
		g.checkSVE("failover", got, data)
	}
	if w := g.where(102); w != events.WhereFallbackCPU {
		t.Fatalf("failover picture read at %q", w)
	}
	g.quit()
	g.noStrataLines()
}

// TestUnreadableKeyNamesFileAccountAndService runs the relay as an account
// that cannot read the paired key (Strata started from its own run script):
// the reply names the file, the account, and the companion's service.
func TestUnreadableKeyNamesFileAccountAndService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and adds an account")
	}
	u := testenv.NewUser(t)
	acct, err := user.Lookup(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(acct.Uid)
	gid, _ := strconv.Atoi(acct.Gid)
	relayBin, _ := builtBinaries(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's own folder is private
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(relayBin), 0o755)
	defer os.Chmod(filepath.Dir(relayBin), 0o700)
	key := filepath.Join(dir, "relay_ed25519")
	os.WriteFile(key, []byte("not readable by the other account"), 0o600)
	sf := filepath.Join(dir, "settings.json")
	(&settings.Settings{Vision: settings.PlacementRemote, Remote: &settings.Remote{Host: "192.0.2.1", User: "u",
		HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlnNjBR2oVr+S6XDC9bnUsf3t3YsEuzRG/i6OzCfSDN", KeyFile: key}}).Save(sf)
	os.Chmod(sf, 0o644)
	mmproj, model := filepath.Join(dir, "mmproj.gguf"), filepath.Join(dir, "model.gguf")
	fakeencoder.WriteMmproj(mmproj, 8)
	fakeencoder.WriteModel(model, 5)
	cmd := exec.Command(relayBin, "--mmproj", mmproj, "--model", model)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STRATA_COMPANION_SETTINGS="+sf, "STRATA_COMPANION_HOME="+filepath.Join(dir, "home"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	img := filepath.Join(dir, "a.img")
	os.WriteFile(img, []byte("\x89PNG\r\n\x1a\nxxxx"), 0o644)
	// As Strata does: one request, its reply, then QUIT (a QUIT sent with
	// the request would stop the picture before its answer).
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("the relay gave no line within 30 s")
			return ""
		}
	}
	if l := next(); !strings.HasPrefix(l, "READY ") {
		t.Fatalf("first line %q", l)
	}
	fmt.Fprintf(stdin, "ENC %s %s\n", img, filepath.Join(dir, "a.sve"))
	out := next()
	io.WriteString(stdin, "QUIT\n")
	if err := cmd.Wait(); err != nil {
		t.Errorf("the relay's exit: %v", err)
	}
	for _, want := range []string{key, u.Name, "cannot read", "Strata Companion service"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the reply lacks %q: %q", want, out)
		}
	}
}

// stopBound is how long the stop tests wait for what should take well under
// a second: half the stand-in's 20 s encode, so that waiting for the encode
// still fails, and far above what a loaded 2-core CI machine can stall (the
// measured times are logged, never asserted).
const stopBound = 10 * time.Second

// TestStopDuringAPictureIntegration: QUIT, the end of input and SIGTERM each stop a
// picture in flight (a 20 s encode): its ERR line comes and the relay exits
// at once (well under 1 s; logged), and nothing is left running on the
// second PC.
func TestStopDuringAPictureIntegration(t *testing.T) {
	for _, how := range []string{"quit", "eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			g := newRig(t, testenv.SSHDOptions{}, "STRATA_STANDIN_ENCODE_MS=20000")
			g.start()
			img := filepath.Join(g.tmp, "slow.img")
			os.WriteFile(img, []byte("\x89PNG\r\n\x1a\nxxxxxxxx"), 0o600)
			fmt.Fprintf(g.stdin, "ENC %s %s\n", img, strings.TrimSuffix(img, ".img")+".sve")
			g.pictureThere() // the picture is with the agent
			t0 := time.Now()
			switch how {
			case "quit":
				io.WriteString(g.stdin, "QUIT\n")
			case "eof":
				g.stdin.Close()
			case "sigterm":
				g.cmd.Process.Signal(syscall.SIGTERM)
			}
			if l, _ := g.line(stopBound); !strings.HasPrefix(l, "ERR ") {
				t.Fatalf("the picture in flight got %q", l)
			}
			done := make(chan error, 1)
			go func() { done <- g.cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(stopBound):
				t.Fatalf("the relay did not exit within %v", stopBound)
			}
			exited := time.Since(t0)
			for len(g.remoteProcs()) > 0 {
				if time.Since(t0) > stopBound {
					t.Fatalf("still running on the second PC: %v", g.remoteProcs())
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: relay gone %v, everything gone %v", how, exited, time.Since(t0))
		})
	}
}

// TestSecondPCReadsOnItsGPUIntegration: a second PC with an NVIDIA GPU (the stand-in
// nvidia-smi on its PATH, recorded by prepare): the relay, started as Strata
// starts it (no --gpu: the config says gpu false), starts that PC's encoder
// with --gpu and 1024 image tokens unless chosen; the encoder's own start
// line says GPU, and the relay reports the GPU's name and the VRAM it took.
// With that GPU gone (the driver finds none), the next start reads on the
// CPU: vision.ready says cpu where a GPU was expected, and one
// vision.degraded says why (once, not again on the next start).
func TestSecondPCReadsOnItsGPUIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and starts a real sshd")
	}
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	g := newRig(t, testenv.SSHDOptions{PathDirs: []string{smi}}, "")
	g.st.Remote.NoGPU = false
	g.st.Remote.GPUs = []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144}}
	g.save()
	g.start()
	l, data, got, _ := g.picture()
	if !strings.HasPrefix(l, fmt.Sprintf("OK %d ", rigTokens)) {
		t.Fatalf("picture on the second PC's GPU: %q", l)
	}
	g.checkSVE("gpu", got, data)
	var encArgs []string
	for _, p := range g.remoteProcs() {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); filepath.Base(exe) == "standin-bin" {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			encArgs = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	if !slices.Contains(encArgs, "--gpu") || slices.Contains(encArgs, "--threads") {
		t.Errorf("the second PC's encoder runs as %q, want --gpu and no --threads", encArgs)
	}
	ready := g.svc.waitFor(t, events.EncoderReady, 1, 10*time.Second)
	if r := events.Get[events.EncoderReadyDetails](ready); r.Device != "gpu" || r.GPU != "NVIDIA GeForce RTX 3060 Laptop GPU" || r.VRAMMiB == nil || *r.VRAMMiB != fakeencoder.GPUVRAMMiB {
		t.Errorf("vision.ready %v: want the GPU by name and the %d MiB it took", ready.Details, fakeencoder.GPUVRAMMiB)
	}
	if n := g.svc.count(events.EncoderDegraded); n != 0 {
		t.Errorf("%d vision.degraded on a GPU", n)
	}

	// The GPU gone: the next agent's encoder finds none.
	testenv.SetGPUs(t, smi, nil)
	restart := func() {
		t.Helper()
		g.st.Vision = settings.PlacementOff // ends the agent session
		g.save()
		if l, _, _, _ := g.picture(); l != relay.OffMessage {
			t.Fatalf("off: %q", l)
		}
		g.st.Vision = settings.PlacementRemote
		g.save()
		if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
			t.Fatalf("picture after the GPU went: %q", l)
		} else {
			g.checkSVE("cpu", got, data)
		}
	}
	restart()
	ready = g.svc.waitFor(t, events.EncoderReady, 2, 10*time.Second)
	if r := events.Get[events.EncoderReadyDetails](ready); r.Device != "cpu" || r.ExpectedDevice != "gpu" {
		t.Errorf("vision.ready without the GPU: %v, want cpu where gpu was expected", ready.Details)
	}
	deg := g.svc.waitFor(t, events.EncoderDegraded, 1, 10*time.Second)
	if !strings.Contains(deg.Message, "CPU") || !strings.Contains(deg.Message, "CUDA") {
		t.Errorf("vision.degraded says %q: want the CPU and the encoder's reason", deg.Message)
	}
	restart()
	g.svc.waitFor(t, events.EncoderReady, 3, 10*time.Second)
	if n := g.svc.count(events.EncoderDegraded); n != 1 {
		t.Errorf("%d vision.degraded events for one change, want 1 (notified once)", n)
	}
	g.quit()
	g.noStrataLines()
}

// TestThisPCsCPUAtStrataSettingsIntegration: pictures read on this PC's CPU use
// Strata's own CPU settings: the Q8_0 projector beside the mmproj, 300 image
// tokens unless chosen, the settings' threads; back to the second PC, the
// local encoder ends (its RAM back).
func TestThisPCsCPUAtStrataSettingsIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "")
	q8 := filepath.Join(g.root, "mmproj-Q8_0.gguf")
	fakeencoder.WriteMmproj(q8, rigEmbd)
	g.st.Vision = settings.PlacementCPU
	g.st.CPUMaxTokens = 0 // Strata's default
	g.st.CPUThreads = 3
	g.save()
	g.start()
	l, data, got, _ := g.picture()
	if !strings.HasPrefix(l, "OK 300 ") {
		t.Fatalf("picture on this PC's CPU: %q (want 300 image tokens)", l)
	}
	if !bytes.Equal(got, fakeencoder.SVE(data, 300, rigEmbd)) {
		t.Fatal("the .sve is not the stand-in's at 300 tokens")
	}
	var local int
	for _, p := range testenv.Children(g.cmd.Process.Pid) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); exe == g.standin {
			local = p
		}
	}
	if local == 0 {
		t.Fatal("no local encoder among the relay's children")
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", local))
	args := strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")[1:], " ")
	if want := "--mmproj " + q8 + " --model " + g.model + " --threads 3 --max-tokens 300"; args != want {
		t.Errorf("the local encoder runs with %q, want %q", args, want)
	}
	ready := g.svc.waitFor(t, events.EncoderReady, 1, 10*time.Second)
	if r := events.Get[events.EncoderReadyDetails](ready); r.Device != "cpu" || r.Threads != 3 || r.Where != events.WhereLocalCPU {
		t.Errorf("vision.ready %v", ready.Details)
	}
	g.st.Vision = settings.PlacementRemote
	g.save()
	if l, _, _, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("back on the second PC: %q", l)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(local); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the local encoder %d still runs 10 s after pictures went back to the second PC", local)
		}
	}
	g.quit()
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// TestHungAgentGivenUpWithinSecondsIntegration: the agent is stopped (SIGSTOP) while it
// reads the first picture after a start (a 20 s encode, so only the
// relay's silence bound can answer in time): the picture gets ERR within
// seconds (the agent proves it is alive with Beat frames every second; three
// missed ones end it), not after the flat 120 s the first pictures had, and
// the next picture is read by a new agent.
func TestHungAgentGivenUpWithinSecondsIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "STRATA_STANDIN_ENCODE_MS=20000")
	g.start()
	img := filepath.Join(g.tmp, "hung.img")
	os.WriteFile(img, []byte("\x89PNG\r\n\x1a\nxxxxxxxx"), 0o600)
	fmt.Fprintf(g.stdin, "ENC %s %s\n", img, strings.TrimSuffix(img, ".img")+".sve")
	agent := g.pictureThere()
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(agent, syscall.SIGKILL) })
	l, d := g.line(15 * time.Second) // the 20 s encode would come later; 120 s before
	if !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, "stopped answering") {
		t.Fatalf("the picture with the agent stopped got %q", l)
	}
	t.Logf("ERR %v after the agent was stopped: %s", d, l)
	fail := g.svc.waitFor(t, events.PictureEncoded, 1, 10*time.Second)
	if !isFalse(events.Get[events.PictureEncodedDetails](fail).OK) || !strings.Contains(fail.Message, "stopped answering") {
		t.Errorf("the picture's outcome event: %+v", fail)
	}
	g.quit()
}

// TestQuitAfterTheLinkIsBlackHoledIntegration: the second PC's link goes silent (the
// namespace's side of the veth down: no reset, no answer) while the
// connection is kept; QUIT a second later ends the relay within a second (a
// dead connection is closed, not waited on).
func TestQuitAfterTheLinkIsBlackHoledIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces")
	}
	ns := testenv.NewNetns(t, testenv.NetnsOptions{})
	g := newRig(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr}, "")
	g.start()
	if l, _, _, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("picture on the live link: %q", l)
	}
	if err := ns.CutLink(); err != nil {
		t.Fatal(err)
	}
	// The relay's keepalive (every 2 s) may be in flight: QUIT a second on.
	time.Sleep(time.Second)
	t0 := time.Now()
	io.WriteString(g.stdin, "QUIT\n")
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(stopBound):
		t.Fatalf("the relay did not exit within %s of QUIT on a black-holed link", stopBound)
	}
	took := time.Since(t0)
	t.Logf("QUIT on a black-holed link: the relay exited in %v", took)
	// Waiting on the dead connection instead takes its keepalive timeout
	// (5 s) or more: the bound sits below that, far above the ~0.6 s measured.
	if took > 3*time.Second {
		t.Errorf("the relay took %v to exit after QUIT on a black-holed link: it waited on the dead connection", took)
	}
	if left := testenv.Children(g.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes of the relay left: %v", left)
	}
	ns.RestoreLink()
}

// TestNewerStrataArgumentsStillServeIntegration: started with arguments a newer Strata
// passes (--min-tokens, --flash-attn) and one no version knows, the relay
// answers READY and reads pictures on the second PC and on this PC's CPU;
// the encoders take --flash-attn, and one that refuses an argument is started
// without it, with a note in the engine log (not a line Strata would take
// for the engine's last words).
func TestNewerStrataArgumentsStillServeIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "")
	g.start("--min-tokens", "64", "--flash-attn", "on", "--a-future-flag", "3")
	for _, place := range []settings.Placement{settings.PlacementRemote, settings.PlacementCPU} {
		g.st.Vision = place
		g.save()
		l, data, got, _ := g.picture()
		if !strings.HasPrefix(l, "OK ") {
			b, _ := os.ReadFile(g.engineLog)
			t.Fatalf("%s with newer arguments: %q\n%s", place, l, b)
		}
		g.checkSVE(string(place), got, data)
	}
	ready := g.svc.waitFor(t, events.EncoderReady, 2, 10*time.Second)
	if a := events.Get[events.EncoderReadyDetails](ready).Args; !strings.Contains(a, "--flash-attn on") || strings.Contains(a, "--min-tokens") || strings.Contains(a, "--a-future-flag") {
		t.Errorf("the local encoder runs with %q: want --flash-attn on, and the arguments it refuses dropped", a)
	}
	g.quit()
	b, _ := os.ReadFile(g.engineLog)
	if !strings.Contains(string(b), "vision relay: Strata passed --a-future-flag") || !strings.Contains(string(b), "does not take --min-tokens") {
		t.Errorf("the engine log does not note the arguments:\n%s", b)
	}
	g.noStrataLines()
}

// TestHungAgentTextWaitsNoLongerIntegration: the relay runs under the stand-in Strata
// server (which reads pictures under its request FIFO, as Strata's main
// repository does), the agent is stopped (SIGSTOP) while it reads the first
// picture after the start: that picture gets its 400 within seconds, and a
// text request sent meanwhile waits no longer than that.
func TestHungAgentTextWaitsNoLongerIntegration(t *testing.T) {
	g := newRig(t, testenv.SSHDOptions{}, "STRATA_STANDIN_ENCODE_MS=20000")
	post := g.standinServer()
	pic, text := make(chan standinAnswer, 1), make(chan standinAnswer, 1)
	go post("/standin/encode", "\x89PNG\r\n\x1a\nhung picture", pic)
	agent := g.pictureThere()
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(agent, syscall.SIGKILL) })
	t0 := time.Now()
	go post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, text)
	var p, x standinAnswer
	select {
	case p = <-pic:
	case <-time.After(15 * time.Second): // the 20 s encode would come later; 120 s before
		t.Fatal("the picture with its agent stopped got no answer within 15 s")
	}
	select {
	case x = <-text:
	case <-time.After(10 * time.Second):
		t.Fatal("the text request got no answer within 10 s of the picture's")
	}
	if p.code != 400 || !strings.Contains(p.body, "stopped answering") {
		t.Errorf("the picture: %d %s", p.code, p.body)
	}
	if x.code != 200 {
		t.Errorf("the text request: %d %s", x.code, x.body)
	}
	t.Logf("agent stopped: picture answered after %v, text after %v (it waited behind the picture)", p.at.Sub(t0), x.at.Sub(t0))
}

// standinAnswer is one HTTP answer of the stand-in Strata server.
type standinAnswer struct {
	code int
	body string
	at   time.Time
}

// standinServer starts the stand-in Strata server (which reads pictures
// under its request FIFO, as Strata's main repository does) with the built
// relay as its encoder, the rig's settings and second PC; the returned func
// POSTs body to path there and sends the answer to to.
func (g *rig) standinServer() func(path, body string, to chan<- standinAnswer) {
	t := g.t
	relayBin, _ := builtBinaries(t)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Extra: map[string]any{
		"env":    map[string]string{"STRATA_COMPANION_SETTINGS": g.settingsFile, locations.EnvHome: g.home},
		"vision": map[string]any{"exe": relayBin, "mmproj": g.mmproj, "model": g.model, "gpu": false, "max_tokens": 1024, "remote": true},
	}})
	srv := exec.Command(r.Python, "serve/server.py", "--engine", "strata", "--config", r.Config, "--port", strconv.Itoa(r.Port))
	srv.Dir = r.Dir
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready:") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the stand-in server did not get ready")
	}
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port)
	post := func(path, body string, to chan<- standinAnswer) {
		resp, err := http.Post(base+path, "application/octet-stream", strings.NewReader(body))
		if err != nil {
			to <- standinAnswer{code: -1, body: err.Error(), at: time.Now()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		to <- standinAnswer{resp.StatusCode, string(b), time.Now()}
	}
	return post
}

// isTrue and isFalse read a *bool detail as the wire's true or false: nil
// (the key absent) is neither.
func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }
