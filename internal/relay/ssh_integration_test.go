//go:build linux

package relay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// binaries builds the relay (which is also the agent) and the stand-in
// encoder once per test binary.
func binaries(t testing.TB) (relayBin, standin string) {
	t.Helper()
	return testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Name: "strata-vision-relay"}),
		testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Name: "standin"})
}

func TestMain(m *testing.M) {
	stopWine := testenv.ShareWine() // the Windows second PC's wine (windows_test.go)
	code := m.Run()
	stopWine()
	os.Exit(code)
}

// secondPC is a "second PC" on loopback: a real sshd, a remote folder with
// the agent, the stand-in encoder, the mmproj and the vocabulary stub.
type secondPC struct {
	sshd      *testenv.SSHD
	dir       string // RemoteDir
	scratch   string
	agentBin  string
	standin   string
	mmproj    string // the server's local mmproj path (Strata passes it)
	model     string
	nTokens   int
	nEmbd     int
	remote    settings.Remote
	stderr    *syncBuffer
	encodeEnv string
}

func newSecondPC(t *testing.T, encodeEnv string) *secondPC {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	relayBin, standin := binaries(t)
	pc := &secondPC{dir: t.TempDir(), scratch: t.TempDir(), nTokens: 4, nEmbd: 16, stderr: &syncBuffer{}, encodeEnv: encodeEnv}
	pc.sshd = testenv.StartSSHD(t, testenv.SSHDOptions{})
	// The server's own copies: the relay reads n_embd from its mmproj.
	local := t.TempDir()
	pc.mmproj, pc.model = filepath.Join(local, "mmproj-test.gguf"), filepath.Join(local, "model-00001-of-00002.gguf")
	if err := fakeencoder.WriteMmproj(pc.mmproj, pc.nEmbd); err != nil {
		t.Fatal(err)
	}
	fakeencoder.WriteModel(pc.model, 10)
	rm, rmodel := remote.RemoteFiles(pc.mmproj, pc.model)
	testenv.Copy(t, pc.mmproj, filepath.Join(pc.dir, rm), 0o644)
	fakeencoder.WriteModel(filepath.Join(pc.dir, rmodel), 10)
	pc.agentBin = filepath.Join(pc.dir, remote.AgentName("linux"))
	if err := testenv.CopyFile(relayBin, pc.agentBin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy per test: tests run in parallel and find their own processes by path.
	pc.standin = filepath.Join(pc.dir, "standin-bin")
	if err := testenv.CopyFile(standin, pc.standin, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteExecutable(filepath.Join(pc.dir, "strata-vision"), []byte("#!/bin/sh\n"+encodeEnv+" exec "+pc.standin+" \"$@\"\n"))
	pc.remote = settings.Remote{
		Host: pc.sshd.Host, Port: pc.sshd.Port, User: pc.sshd.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pc.sshd.HostSigner.PublicKey()))),
		KeyFile:   pc.sshd.ClientKeyFile,
		RemoteDir: pc.dir, EncoderPath: "strata-vision",
	}
	return pc
}

// syncBuffer is an agent's stderr as the tests read it: testenv's buffer,
// plus the events in it.
type syncBuffer struct{ testenv.Buffer }

func (s *syncBuffer) events() []events.Event {
	var out []events.Event
	for _, l := range strings.Split(s.String(), "\n") {
		if e, ok := events.ParseLine(l); ok {
			out = append(out, e)
		}
	}
	return out
}

// strata drives a relay as Strata's server does: line by line over pipes.
type strata struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	r    *Relay
}

func (pc *secondPC) startRelay(t *testing.T, opt Options) *strata {
	t.Helper()
	args := remote.AgentArgs{OS: "linux", RemoteDir: pc.dir, Encoder: "strata-vision"}
	args.Mmproj, args.Model = remote.RemoteFiles(pc.mmproj, pc.model)
	args.MaxTokens = pc.nTokens
	args.IdleStopS = pc.remote.IdleStopS
	if opt.AgentCommand == "" {
		opt.AgentCommand = mustQuote(t, "linux", append(args.Argv(), "--scratch", pc.scratch))
	}
	opt.Host = pc.remote.Host
	if opt.Dial == nil {
		opt.Dial = remote.SSHDialer(pc.remote)
	}
	opt.NEmbd = pc.nEmbd
	if opt.Log == nil {
		opt.Log = pc.stderr
	}
	if opt.Report == nil {
		opt.Report = func(e events.Event) { fmt.Fprintln(pc.stderr, events.FormatLine(e)) }
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &strata{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1), r: New(opt)}
	go func() { s.done <- s.r.Run(context.Background(), inR, outW); outW.Close() }()
	if l := s.line(); l != fmt.Sprintf("READY %d", pc.nEmbd) {
		t.Fatalf("first line %q", l)
	}
	t.Cleanup(func() { s.quit() })
	return s
}

func (s *strata) line() string {
	s.t.Helper()
	got := make(chan string, 1)
	go func() { l, _ := s.out.ReadString('\n'); got <- strings.TrimSuffix(l, "\n") }()
	select {
	case l := <-got:
		return l
	case <-time.After(60 * time.Second):
		s.t.Fatal("no reply line within 60 s: the relay hung")
		return ""
	}
}

func (s *strata) enc(img, out string) string {
	s.t.Helper()
	fmt.Fprintf(s.in, "ENC %s %s\n", img, out)
	return s.line()
}

func (s *strata) quit() {
	io.WriteString(s.in, "QUIT\n")
	select {
	case <-s.done:
		s.done <- nil
	case <-time.After(20 * time.Second):
		s.t.Error("the relay did not end after QUIT")
	}
}

// picture writes a small PNG-headed picture whose bytes depend on i, as
// Strata does: <dir>/<sha>.img, the .sve beside it.
func picture(t testing.TB, dir string, i, size int) (img, sve string, data []byte) {
	data = make([]byte, size)
	copy(data, "\x89PNG\r\n\x1a\n")
	for j := 8; j < size; j++ {
		data[j] = byte(i*31 + j*7)
	}
	img = filepath.Join(dir, fmt.Sprintf("%08x.img", i))
	if err := os.WriteFile(img, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return img, strings.TrimSuffix(img, ".img") + ".sve", data
}

// procsRunning lists pids whose executable is one of paths.
func procsRunning(paths ...string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		exe, err := os.Readlink(d + "/exe")
		if err != nil {
			continue
		}
		for _, p := range paths {
			if exe == p {
				var pid int
				fmt.Sscan(filepath.Base(d), &pid)
				out = append(out, pid)
			}
		}
	}
	return out
}

func waitGone(t *testing.T, what string, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(procsRunning(paths...)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s still running: %v", what, procsRunning(paths...))
}

func TestPicturesThroughARealSSHDAreByteIdenticalIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	s := pc.startRelay(t, Options{})
	work := t.TempDir()
	for i := 0; i < 3; i++ {
		img, sve, data := picture(t, work, i, 5000+i)
		line := s.enc(img, sve)
		if !strings.HasPrefix(line, "OK 4 2 2 ") {
			t.Fatalf("picture %d: %q\n%s", i, line, pc.stderr)
		}
		got, err := os.ReadFile(sve)
		if err != nil || !bytes.Equal(got, fakeencoder.SVE(data, pc.nTokens, pc.nEmbd)) {
			t.Fatalf("picture %d: the .sve differs from the encoder's (%d bytes, %v)", i, len(got), err)
		}
		os.Remove(img) // Strata deletes the picture as soon as the reply arrives
	}
	// A picture the encoder cannot read is its ERR, passed through.
	bad := filepath.Join(work, "bad.img")
	os.WriteFile(bad, []byte("GIF? no"), 0o644)
	if l := s.enc(bad, filepath.Join(work, "bad.sve")); !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, "cannot read the image") {
		t.Fatalf("unreadable picture: %q", l)
	}
	if l := s.enc(filepath.Join(work, "gone.img"), filepath.Join(work, "gone.sve")); !strings.HasPrefix(l, "ERR cannot read the picture") {
		t.Fatalf("missing picture: %q", l)
	}
	// An output folder that cannot be written: ERR, and the session goes on.
	img, _, _ := picture(t, work, 5, 700)
	if l := s.enc(img, filepath.Join(work, "no such folder", "x.sve")); !strings.HasPrefix(l, "ERR cannot write the result beside") {
		t.Fatalf("unwritable output: %q", l)
	}
	img, sve, data := picture(t, work, 6, 800)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("after an unwritable output: %q", l)
	}
	if got, _ := os.ReadFile(sve); !bytes.Equal(got, fakeencoder.SVE(data, pc.nTokens, pc.nEmbd)) {
		t.Fatal("the .sve after an unwritable output differs")
	}
	// A result whose name exists already (the same picture again, after
	// Strata's cache let it go) replaces the old file whole.
	img, sve, data = picture(t, work, 7, 900)
	os.WriteFile(sve, bytes.Repeat([]byte("stale "), 50000), 0o644)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("over an old result: %q", l)
	}
	if got, _ := os.ReadFile(sve); !bytes.Equal(got, fakeencoder.SVE(data, pc.nTokens, pc.nEmbd)) {
		t.Fatal("the .sve written over an old one differs from the encoder's")
	}
	// An output name that is a folder is refused, and the folder stays.
	img, _, _ = picture(t, work, 8, 900)
	folder := filepath.Join(work, "folder.sve")
	os.Mkdir(folder, 0o755)
	if l := s.enc(img, folder); !strings.HasPrefix(l, "ERR cannot write the result") {
		t.Fatalf("a folder as the output: %q", l)
	}
	if st, err := os.Stat(folder); err != nil || !st.IsDir() {
		t.Fatalf("the folder named as output is gone: %v", err)
	}
	if ents, _ := filepath.Glob(filepath.Join(work, ".*tmp*")); len(ents) != 0 {
		t.Fatalf("temporary files left beside the results: %v", ents)
	}
	s.quit()
	waitGone(t, "the agent or the encoder after QUIT", pc.agentBin, pc.standin)
	kinds := map[events.Kind]int{}
	okPictures := 0
	for _, e := range pc.stderr.events() {
		kinds[e.Kind]++
		if e.Kind == events.PictureEncoded && isTrue(events.Get[events.PictureEncodedDetails](e).OK) {
			okPictures++
		}
	}
	// One outcome per picture: 5 read, 4 refused or failed.
	if kinds[events.RemoteConnected] != 1 || kinds[events.PictureEncoded] != 9 || okPictures != 5 || kinds[events.EncoderReady] != 1 {
		t.Fatalf("events %v, %d ok pictures (one connection for every picture, one outcome event per picture)\n%s", kinds, okPictures, pc.stderr)
	}
	if ents, _ := os.ReadDir(pc.scratch); len(ents) != 0 {
		t.Fatalf("scratch left on the second PC: %v", ents)
	}
}

func TestSecondPCDownThenBackIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	pc.sshd.Stop()
	s := pc.startRelay(t, Options{}) // READY came without the second PC
	work := t.TempDir()
	img, sve, data := picture(t, work, 1, 3000)
	t0 := time.Now()
	l := s.enc(img, sve)
	if !strings.HasPrefix(l, "ERR second PC "+pc.remote.Host) || !strings.Contains(l, "text still works") {
		t.Fatalf("with sshd stopped: %q", l)
	}
	t.Logf("ERR with the second PC down after %v: %s", time.Since(t0), l)
	if _, err := os.Stat(sve); err == nil {
		t.Fatal("a .sve appeared for a failed picture")
	}
	pc.sshd.Start()
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("after the second PC came back: %q\n%s", l, pc.stderr)
	}
	got, _ := os.ReadFile(sve)
	if !bytes.Equal(got, fakeencoder.SVE(data, pc.nTokens, pc.nEmbd)) {
		t.Fatal(".sve differs")
	}
	// Gone mid-session, back again: the kept connection is reopened.
	pc.sshd.Stop()
	if l := s.enc(img, sve); !strings.HasPrefix(l, "ERR ") {
		t.Fatalf("after sshd stopped with a kept connection: %q", l)
	}
	pc.sshd.Start()
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("after sshd restarted: %q\n%s", l, pc.stderr)
	}
	// And a restart between two pictures costs no ERR at all: once the
	// relay saw the kept connection close, the next picture dials anew.
	closed := func() int {
		n := 0
		for _, e := range pc.stderr.events() {
			if e.Kind == events.RemoteDisconnected {
				n++
			}
		}
		return n
	}
	before := closed()
	pc.sshd.Stop()
	pc.sshd.Start()
	for deadline := time.Now().Add(15 * time.Second); closed() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not see its connection close within 15 s of the sshd restart\n%s", pc.stderr)
		}
	}
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("after a restart between pictures: %q\n%s", l, pc.stderr)
	}
	var up, down int
	for _, e := range pc.stderr.events() {
		switch e.Kind {
		case events.RemoteUnreachable:
			down++
		case events.RemoteConnected:
			up++
		}
	}
	if down < 1 || up < 3 {
		t.Fatalf("events: %d unreachable, %d connected\n%s", down, up, pc.stderr)
	}
}

// A second PC whose port accepts but never speaks ssh (a hung machine, a
// black-holing firewall): ERR within the connect bound, not a hang.
func TestSilentSecondPCGivesErrWithinTheBoundIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	pc.remote.Port = l.Addr().(*net.TCPAddr).Port
	s := pc.startRelay(t, Options{ConnectTimeout: 2 * time.Second})
	img, sve, _ := picture(t, t.TempDir(), 1, 100)
	t0 := time.Now()
	line := s.enc(img, sve)
	if !strings.HasPrefix(line, "ERR second PC") || !strings.Contains(line, "did not answer within 2s") {
		t.Fatalf("reply %q", line)
	}
	t.Logf("ERR after %v (bound: the connect timeout, 2 s here, 5 s by default)", time.Since(t0))
}

func TestAgentKilledMidPictureIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "STRATA_STANDIN_ENCODE_MS=2000")
	s := pc.startRelay(t, Options{})
	img, sve, data := picture(t, t.TempDir(), 7, 2000)
	got := make(chan string, 1)
	go func() { got <- s.enc(img, sve) }()
	// Wait until the picture is in the encoder's hands, then kill the agent.
	deadline := time.Now().Add(20 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(pc.scratch, "*", "*.img"))
		if len(files) > 0 && len(procsRunning(pc.standin)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the picture never reached the encoder\n%s", pc.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range procsRunning(pc.agentBin) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	l := <-got
	if !strings.HasPrefix(l, "ERR the agent on second PC") || !strings.Contains(l, "next picture starts it again") {
		t.Fatalf("after the agent was killed: %q", l)
	}
	waitGone(t, "the encoder after its agent was killed (orphan)", pc.standin)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("the next picture: %q\n%s", l, pc.stderr)
	}
	if b, _ := os.ReadFile(sve); !bytes.Equal(b, fakeencoder.SVE(data, pc.nTokens, pc.nEmbd)) {
		t.Fatal(".sve differs")
	}
	// The new agent removed the killed one's scratch folder.
	if ents, _ := os.ReadDir(pc.scratch); len(ents) != 1 {
		t.Fatalf("scratch folders on the second PC: %v", ents)
	}
}

func TestPictureOver32MiBIsRefusedIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	s := pc.startRelay(t, Options{})
	work := t.TempDir()
	big := filepath.Join(work, "big.img")
	f, _ := os.Create(big)
	f.Write([]byte("\x89PNG\r\n\x1a\n"))
	f.Truncate(33 << 20)
	f.Close()
	if l := s.enc(big, filepath.Join(work, "big.sve")); !strings.HasPrefix(l, "ERR the picture is 33.0 MiB") || !strings.Contains(l, "at most 32 MiB") {
		t.Fatalf("33 MiB picture: %q", l)
	}
	img, sve, _ := picture(t, work, 1, 1000)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("a normal picture after the refusal: %q", l)
	}
}

func countFDs(pid string) int {
	ents, _ := os.ReadDir("/proc/" + pid + "/fd")
	return len(ents)
}

func TestFiveHundredPicturesLeakNothingIntegration(t *testing.T) {
	pc := newSecondPC(t, "")
	s := pc.startRelay(t, Options{})
	work := t.TempDir()
	var baseG, baseFD, baseAgentFD int
	var agentPID string
	for i := 0; i < 500; i++ {
		img, sve, _ := picture(t, work, i%50, 600)
		if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") {
			t.Fatalf("picture %d: %q\n%s", i, l, pc.stderr)
		}
		os.Remove(img)
		os.Remove(sve)
		if i == 49 {
			runtime.GC()
			baseG, baseFD = runtime.NumGoroutine(), countFDs("self")
			pids := procsRunning(pc.agentBin)
			if len(pids) != 1 {
				t.Fatalf("agents running: %v", pids)
			}
			agentPID = fmt.Sprint(pids[0])
			baseAgentFD = countFDs(agentPID)
		}
	}
	// What the last picture started ends by itself: wait for the counts to
	// come down to the base (with a deadline), then compare.
	g, fd, afd := runtime.NumGoroutine(), countFDs("self"), countFDs(agentPID)
	for deadline := time.Now().Add(10 * time.Second); (g > baseG+2 || fd > baseFD+2 || afd > baseAgentFD) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		g, fd, afd = runtime.NumGoroutine(), countFDs("self"), countFDs(agentPID)
	}
	t.Logf("after 50 pictures: %d goroutines, %d fds here, %d fds in the agent; after 500: %d, %d, %d", baseG, baseFD, baseAgentFD, g, fd, afd)
	if g > baseG+2 || fd > baseFD+2 || afd > baseAgentFD {
		t.Fatalf("growth over 450 pictures: goroutines %d->%d, fds %d->%d, agent fds %d->%d", baseG, g, baseFD, fd, baseAgentFD, afd)
	}
	if pids := procsRunning(pc.agentBin); len(pids) != 1 || fmt.Sprint(pids[0]) != agentPID {
		t.Fatalf("the agent was restarted: %v (one agent, one encoder for every picture)", pids)
	}
	scratch, _ := filepath.Glob(filepath.Join(pc.scratch, "*", "*"))
	local, _ := os.ReadDir(work)
	if len(scratch) != 0 || len(local) != 0 {
		t.Fatalf("files left: %v on the second PC, %d here", scratch, len(local))
	}
	// One vision.picture per picture, plus a few (connected, ready): no
	// event per keepalive or ping.
	evs := pc.stderr.events()
	pictures := 0
	for _, e := range evs {
		if e.Kind == events.PictureEncoded {
			pictures++
		}
	}
	if pictures != 500 || len(evs) > 510 {
		t.Errorf("%d events, %d of them pictures, for 500 pictures", len(evs), pictures)
	}
}

// mustQuote is argv quoted for goos's login shell (remotecmd.Quote).
func mustQuote(t *testing.T, goos string, argv []string) string {
	t.Helper()
	s, err := remotecmd.Quote(goos, argv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// isTrue reads a *bool detail as the wire's true: nil (the key absent) is
// not true.
func isTrue(b *bool) bool { return b != nil && *b }
