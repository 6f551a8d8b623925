//go:build linux

// Package relaybench measures the remote-vision relay as its strongest peer
// would: the shipped strata-vision-relay binary (built here, driven through
// Strata's line protocol on its stdin/stdout, its agent on the "second PC"
// behind a real sshd), against
//   - floor: one kept raw TCP connection over the same link carrying the same
//     bytes (picture in, .sve out): what the link itself allows;
//   - fair: OpenSSH with one ControlMaster connection and one `ssh` per
//     picture that streams the picture in on stdin and the .sve out on stdout,
//     starting the encoder for that picture;
//   - naive: the old recipe, three fresh connections per picture (scp -O the
//     picture, ssh one ENC, scp -O the result back).
//
// Every recipe logs in as one throwaway account whose login shell is /bin/sh
// (dash) with an empty ~/.profile and ~/.bashrc: `sh -c` reads no rc file, so
// no baseline pays a login script (root's .bashrc costs ~0.6 s per ssh on
// some machines). The stand-in encoder starts in 0 ms, or after WarmupMS, a
// GPU warm-up: CUDA context creation plus uploading the ~1.4 GB mmproj
// (docs/strata.md: the encoder holds 1383 MiB of VRAM) from the page cache, about
// 1.5 s on an RTX-class card. The relay pays it once (its agent keeps the
// encoder); each fair/naive picture pays it again.
//
// Run it with bench/relay/run.sh (root: namespaces, tc, useradd).
package relaybench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

const (
	nTokens  = 1024
	nEmbd    = 2560
	picSize  = 300 << 10 // a typical 1024x1024 JPEG
	bigSize  = 30 << 20  // the RSS check's large picture
	sveSize  = 20 + 4*nTokens*nEmbd
	WarmupMS = 1500
)

// envSink makes the test binary a raw TCP sink (the floor's far end).
const envSink = "RELAYBENCH_SINK"

func TestMain(m *testing.M) {
	if addr := os.Getenv(envSink); addr != "" {
		runSink(addr)
		return
	}
	code := m.Run()
	for _, d := range cleanup {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// runSink serves the floor: per request an 8-byte header (picture bytes,
// reply bytes), the picture, then the reply written back.
func runSink(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("LISTENING")
	reply := make([]byte, sveSize)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var hd [8]byte
			for {
				if _, err := io.ReadFull(c, hd[:]); err != nil {
					return
				}
				in, out := binary.BigEndian.Uint32(hd[:]), binary.BigEndian.Uint32(hd[4:])
				if _, err := io.CopyN(io.Discard, c, int64(in)); err != nil {
					return
				}
				if _, err := c.Write(reply[:out]); err != nil {
					return
				}
			}
		}()
	}
}

// relayOnly (RELAYBENCH_RELAY_ONLY=1) runs only the relay pictures: for
// profiling the relay and its agent (perf, strace) without the baselines'
// processes in the way. The ratios need the full run.
var relayOnly = os.Getenv("RELAYBENCH_RELAY_ONLY") != ""

var (
	buildMu  sync.Mutex
	built    = map[string][2]string{}
	cleanup  []string
	cleanMu  sync.Mutex
	variants = []string{"after"}
)

func init() {
	if os.Getenv("RELAYBENCH_BEFORE") != "" {
		variants = append(variants, "before")
	}
}

func keep(dir string) {
	cleanMu.Lock()
	cleanup = append(cleanup, dir)
	cleanMu.Unlock()
}

// binaries builds the relay (from this tree, or for "before" from the commit
// RELAYBENCH_BEFORE names, extracted with git archive) and the stand-in.
func binaries(b *testing.B, variant string) (relayBin, standin string) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if r, ok := built[variant]; ok {
		return r[0], r[1]
	}
	dir, err := os.MkdirTemp("", "relay-bench-bin-")
	if err != nil {
		b.Fatal(err)
	}
	keep(dir)
	src := "../.."
	if variant == "before" {
		src = filepath.Join(dir, "src")
		os.Mkdir(src, 0o755)
		cmd := exec.Command("sh", "-c", "git archive \"$RELAYBENCH_BEFORE\" | tar -x -C "+src)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("extracting %s: %v\n%s", os.Getenv("RELAYBENCH_BEFORE"), err, out)
		}
	}
	for out, pkg := range map[string]string{"strata-vision-relay": "./relay", "standin": "./internal/fakeencoder/cmd/strata-vision-standin"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, out), pkg)
		cmd.Dir = src
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s (%s): %v\n%s", pkg, variant, err, o)
		}
	}
	built[variant] = [2]string{filepath.Join(dir, "strata-vision-relay"), filepath.Join(dir, "standin")}
	return built[variant][0], built[variant][1]
}

type link struct {
	name     string
	rateMbit int           // 0: loopback, unshaped
	oneWay   time.Duration // added by the delaying proxy
}

var links = []link{
	{name: "loopback"},
	{name: "1Gbit-1ms", rateMbit: 1000, oneWay: time.Millisecond},
	{name: "100Mbit-20ms", rateMbit: 100, oneWay: 20 * time.Millisecond},
}

type env struct {
	sshd      *testenv.SSHD
	user      *testenv.User
	netns     *testenv.Netns
	host      string
	port      int
	sinkAddr  string
	remoteDir string // readable by the account
	spool     string // writable by the account (the recipes' files)
	mmproj    string // local
	model     string
	work      string
	knownHost string
	l         link
}

func writeFile(b *testing.B, path string, data []byte, mode os.FileMode) {
	if err := os.WriteFile(path, data, mode); err != nil {
		b.Fatal(err)
	}
	os.Chmod(path, mode)
}

func setup(b *testing.B, l link) *env {
	if testing.Short() {
		b.Skip("starts sshd")
	}
	testenv.LookPath(b, "ssh", "scp")
	e := &env{work: b.TempDir(), l: l}
	var err error
	if e.remoteDir, err = os.MkdirTemp("", "relay-bench-remote-"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(e.remoteDir) })
	os.Chmod(e.remoteDir, 0o755)
	e.spool = filepath.Join(e.remoteDir, "spool")
	os.Mkdir(e.spool, 0o777)
	os.Chmod(e.spool, os.ModeSticky|0o777)

	e.user = testenv.NewUser(b)
	for _, rc := range []string{".profile", ".bashrc", ".shrc"} {
		os.WriteFile(filepath.Join(e.user.Home, rc), nil, 0o644) // empty rc files
	}
	opts := testenv.SSHDOptions{}
	sinkHost := "127.0.0.1"
	if l.rateMbit > 0 {
		e.netns = testenv.NewNetns(b, testenv.NetnsOptions{RateMbit: l.rateMbit})
		opts = testenv.SSHDOptions{Netns: e.netns.Name, ListenHost: e.netns.PeerAddr}
		sinkHost = e.netns.PeerAddr
	}
	e.sshd = testenv.StartSSHD(b, opts)
	e.host, e.port = e.sshd.Host, e.sshd.Port
	// sshd reads authorized_keys as the account: let it (the host key stays 0600).
	os.Chmod(filepath.Dir(e.sshd.Dir), 0o755)
	os.Chmod(e.sshd.Dir, 0o755)
	os.Chmod(e.sshd.AuthorizedKeysFile, 0o644)
	e.sinkAddr = e.startSink(b, sinkHost)
	if l.oneWay > 0 {
		addr := testenv.StartDelayProxy(b, e.sshd.Addr(), l.oneWay)
		i := strings.LastIndexByte(addr, ':')
		e.host = addr[:i]
		e.port, _ = strconv.Atoi(addr[i+1:])
		e.sinkAddr = testenv.StartDelayProxy(b, e.sinkAddr, l.oneWay)
	}
	local := b.TempDir()
	e.mmproj, e.model = filepath.Join(local, "mmproj.gguf"), filepath.Join(local, "model-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(e.mmproj, nEmbd)
	fakeencoder.WriteModel(e.model, 100)
	rm, rmodel := remote.RemoteFiles(e.mmproj, e.model)
	cp := func(from, to string, mode os.FileMode) {
		d, err := os.ReadFile(from)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, to, d, mode)
	}
	cp(e.mmproj, filepath.Join(e.remoteDir, rm), 0o644)
	cp(e.model, filepath.Join(e.remoteDir, rmodel), 0o644)
	for _, v := range variants {
		relayBin, standin := binaries(b, v)
		d := filepath.Join(e.remoteDir, v)
		os.Mkdir(d, 0o755)
		os.Chmod(d, 0o755)
		cp(relayBin, filepath.Join(d, "strata-vision-relay"), 0o755)
		cp(e.mmproj, filepath.Join(d, rm), 0o644)
		cp(e.model, filepath.Join(d, rmodel), 0o644)
		cp(standin, filepath.Join(d, "standin"), 0o755)
		for name, ms := range map[string]int{"enc-0": 0, "enc-warm": WarmupMS} {
			// The transport is measured: the stand-in's modelled device
			// time is off, its start-up is the recipe's.
			writeFile(b, filepath.Join(d, name), []byte(fmt.Sprintf("#!/bin/sh\nSTRATA_STANDIN_NO_DEVICE_TIME=1 STRATA_STANDIN_START_MS=%d exec %s \"$@\"\n", ms, filepath.Join(d, "standin"))), 0o755)
		}
	}
	// The account reads the key through a copy it may read (StrictModes no).
	hostPat := fmt.Sprintf("[%s]:%d", e.host, e.port)
	e.knownHost = filepath.Join(local, "known_hosts")
	os.WriteFile(e.knownHost, []byte(hostPat+" "+string(ssh.MarshalAuthorizedKey(e.sshd.HostSigner.PublicKey()))), 0o600)
	return e
}

// startSink starts this test binary as the floor's far end, inside the
// link's namespace (or on loopback).
func (e *env) startSink(b *testing.B, host string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // pick a free port number
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var cmd *exec.Cmd
	if e.netns != nil {
		cmd = e.netns.Command(os.Args[0])
	} else {
		cmd = exec.Command(os.Args[0])
	}
	cmd.Env = append(os.Environ(), envSink+"="+addr)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "LISTENING") {
		b.Fatalf("the raw TCP sink did not start: %q", line)
	}
	return addr
}

func picture(size int) []byte {
	p := make([]byte, size)
	copy(p, "\xff\xd8\xff\xe0")
	for i := 4; i < len(p); i++ {
		p[i] = byte(i * 7)
	}
	return p
}

// perThread sums value over a process's threads' /proc/PID/task/TID/<file>
// (a thread that ended meanwhile is skipped).
func perThread(pid int, file string, value func(content string) float64) float64 {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var sum float64
	for _, t := range tasks {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/%s", pid, t.Name(), file)); err == nil {
			sum += value(string(b))
		}
	}
	return sum
}

// cpuMS is a process's CPU so far in ms: the scheduler's run time (ns)
// summed over its threads (/proc/PID/task/*/schedstat). The relay's and the
// agent's threads live as long as they do, so a difference is exact to the
// microsecond (utime/stime ticks would be 10 ms).
func cpuMS(pid int) float64 {
	return perThread(pid, "schedstat", func(s string) float64 {
		if f := strings.Fields(s); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			return v
		}
		return 0
	}) / 1e6
}

// switches is a process's context switches so far (voluntary and not),
// summed over its threads: each is a sleep and a wake-up, which is where a
// relay that takes its bytes in small bites spends its CPU.
func switches(pid int) float64 {
	return perThread(pid, "status", func(s string) float64 {
		var n float64
		for _, line := range strings.Split(s, "\n") {
			if f := strings.Fields(line); len(f) == 2 && strings.HasSuffix(f[0], "ctxt_switches:") {
				v, _ := strconv.ParseFloat(f[1], 64)
				n += v
			}
		}
		return n
	})
}

// rssMiB is a process's resident set and its high-water mark.
func rssMiB(pid int) (rss, hwm float64) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				rss = kb / 1024
			case "VmHWM:":
				hwm = kb / 1024
			}
		}
	}
	return
}

// pidOf finds the process running exe.
func pidOf(exe string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && p == exe {
			return pid
		}
	}
	return 0
}

// relayProc is the shipped binary as Strata starts it.
type relayProc struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Reader
	agentExe string
	agentPID int
}

func (e *env) startRelay(b *testing.B, variant string) *relayProc {
	relayBin, _ := binaries(b, variant)
	dir := filepath.Join(e.remoteDir, variant)
	keyCopy := filepath.Join(e.work, "key-"+variant)
	k, _ := os.ReadFile(e.sshd.ClientKeyFile)
	os.WriteFile(keyCopy, k, 0o600)
	st := &settings.Settings{Remote: &settings.Remote{Host: e.host, Port: e.port, User: e.user.Name,
		HostKey: string(ssh.MarshalAuthorizedKey(e.sshd.HostSigner.PublicKey())), KeyFile: keyCopy,
		RemoteDir: dir, OS: "linux", EncoderPath: "enc-warm", NEmbd: nEmbd,
		// The relay decides the second PC's device and tokens from these
		// (it leaves Strata's --gpu and --max-tokens alone): no GPU there,
		// nTokens chosen, as the recipes it is compared with run.
		NoGPU: true, MaxTokens: nTokens}}
	sp := filepath.Join(e.work, "settings-"+variant+".json")
	if err := st.Save(sp); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(relayBin, "--mmproj", e.mmproj, "--model", e.model, "--gpu", "--max-tokens", strconv.Itoa(nTokens))
	cmd.Env = append(os.Environ(), "STRATA_COMPANION_SETTINGS="+sp)
	log, _ := os.Create(filepath.Join(e.work, "engine-"+variant+".log"))
	cmd.Stderr = log
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &relayProc{cmd: cmd, in: in, out: bufio.NewReader(out), agentExe: filepath.Join(dir, "strata-vision-relay")}
	b.Cleanup(func() {
		io.WriteString(in, "QUIT\n")
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	if l, _ := p.out.ReadString('\n'); !strings.HasPrefix(l, "READY ") {
		b.Fatalf("relay: first line %q", l)
	}
	return p
}

// encode sends one ENC and returns the encoder's own ms.
func (p *relayProc) encode(b *testing.B, img, out string) float64 {
	fmt.Fprintf(p.in, "ENC %s %s\n", img, out)
	l, err := p.out.ReadString('\n')
	f := strings.Fields(l)
	if err != nil || len(f) != 5 || f[0] != "OK" {
		b.Fatalf("relay: %q %v", l, err)
	}
	if p.agentPID == 0 {
		p.agentPID = pidOf(p.agentExe)
	}
	ms, _ := strconv.ParseFloat(f[4], 64)
	return ms
}

func (e *env) sshCommon() []string {
	return []string{"-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + e.knownHost, "-o", "StrictHostKeyChecking=yes",
		"-o", "LogLevel=ERROR", "-i", e.sshd.ClientKeyFile}
}

func encodeMS(b *testing.B, out string) float64 {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[0] == "OK" {
			ms, _ := strconv.ParseFloat(f[4], 64)
			return ms
		}
	}
	b.Fatalf("remote encoder: %s", out)
	return 0
}

func (e *env) encArgs(variant, wrapper string) string {
	rm, rmodel := remote.RemoteFiles(e.mmproj, e.model)
	return fmt.Sprintf("%s/%s/%s --mmproj %s/%s --model %s/%s --gpu --max-tokens %d", e.remoteDir, variant, wrapper, e.remoteDir, rm, e.remoteDir, rmodel, nTokens)
}

// fair: one ControlMaster connection; per picture one ssh that streams the
// picture in and the .sve out, starting the encoder for it.
func (e *env) fair(b *testing.B, wrapper string) func(img string) float64 {
	sock := filepath.Join(e.work, "cm-"+wrapper)
	target := e.user.Name + "@" + e.host
	base := append(e.sshCommon(), "-p", strconv.Itoa(e.port), "-o", "ControlPath="+sock)
	master := exec.Command("ssh", append(append([]string{}, base...), "-o", "ControlMaster=yes", "-N", target)...)
	if err := master.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { master.Process.Kill(); master.Wait() })
	for i := 0; ; i++ {
		if exec.Command("ssh", append(append([]string{}, base...), "-O", "check", target)...).Run() == nil {
			break
		}
		if i > 100 {
			b.Fatal("the ControlMaster connection did not come up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	remote := fmt.Sprintf(`d=$(mktemp -d -p %s) && cat > $d/p.img && printf 'ENC %%s/p.img %%s/p.sve\nQUIT\n' $d $d | %s | grep '^OK' >&2 && cat $d/p.sve; rm -rf $d`,
		e.spool, e.encArgs("after", wrapper))
	n := 0
	return func(img string) float64 {
		n++ // a fresh name per picture, as for the relay (see BenchmarkRelay)
		out := filepath.Join(e.work, fmt.Sprintf("fair-%s-%d.sve", wrapper, n))
		defer os.Remove(out)
		in, _ := os.Open(img)
		defer in.Close()
		o, _ := os.Create(out)
		defer o.Close()
		var stderr strings.Builder
		cmd := exec.Command("ssh", append(append([]string{}, base...), target, remote)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, o, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("fair recipe: %v\n%s", err, stderr.String())
		}
		if st, _ := o.Stat(); st.Size() != sveSize {
			b.Fatalf("fair recipe: .sve of %d bytes", st.Size())
		}
		return encodeMS(b, stderr.String())
	}
}

// naive: three fresh connections per picture.
func (e *env) naive(b *testing.B) func(img string) float64 {
	target := e.user.Name + "@" + e.host
	port := strconv.Itoa(e.port)
	rin, rout := filepath.Join(e.spool, "n.img"), filepath.Join(e.spool, "n.sve")
	encCmd := fmt.Sprintf("printf 'ENC %s %s\\nQUIT\\n' | %s", rin, rout, e.encArgs("after", "enc-0"))
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	scp := append([]string{"-q", "-O", "-P", port}, e.sshCommon()...)
	sshArgs := append([]string{"-p", port}, e.sshCommon()...)
	return func(img string) float64 {
		run("scp", append(append([]string{}, scp...), img, target+":"+rin)...)
		out := run("ssh", append(append([]string{}, sshArgs...), target, encCmd)...)
		run("scp", append(append([]string{}, scp...), target+":"+rout, filepath.Join(e.work, "n.sve"))...)
		return encodeMS(b, out)
	}
}

// floor: one kept raw TCP connection carrying the same bytes. With out set,
// the reply goes into that file in 1 MiB writes, as the relay must write the
// .sve for Strata (the "floor+file" column); with out "", it is discarded.
func (e *env) floor(b *testing.B) func(size int, out string) {
	c, err := net.Dial("tcp", e.sinkAddr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	pic := picture(bigSize)
	reply := make([]byte, 1<<20)
	return func(size int, out string) {
		var hd [8]byte
		binary.BigEndian.PutUint32(hd[:], uint32(size))
		binary.BigEndian.PutUint32(hd[4:], sveSize)
		c.Write(hd[:])
		if _, err := c.Write(pic[:size]); err != nil {
			b.Fatal(err)
		}
		if out == "" {
			if _, err := io.CopyBuffer(io.Discard, io.LimitReader(c, sveSize), reply); err != nil {
				b.Fatal(err)
			}
			return
		}
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for left := sveSize; left > 0; {
			n, err := io.ReadFull(c, reply[:min(left, len(reply))])
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(reply[:n]); err != nil {
				b.Fatal(err)
			}
			left -= n
		}
	}
}

// BenchmarkRelay runs, per link, the relay (this tree's, and the before
// build when RELAYBENCH_BEFORE is set), the floor and the OpenSSH recipes in
// turn, picture by picture, so a machine whose speed drifts affects all
// alike. Figures are per picture; ns/op is one round of everything.
func BenchmarkRelay(b *testing.B) {
	for _, l := range links {
		b.Run(l.name, func(b *testing.B) {
			e := setup(b, l)
			img := filepath.Join(e.work, "p.img")
			writeFile(b, img, picture(picSize), 0o644)
			relays := map[string]*relayProc{}
			for _, v := range variants {
				relays[v] = e.startRelay(b, v)
				relays[v].encode(b, img, filepath.Join(e.work, v+".sve")) // connect, agent, warm-up: not measured
			}
			floor := e.floor(b)
			fair0, fairWarm, naive := e.fair(b, "enc-0"), e.fair(b, "enc-warm"), e.naive(b)
			floor(picSize, "")
			fair0(img)
			type acc struct{ ms, enc float64 }
			sums := map[string]*acc{}
			add := func(name string, d time.Duration, enc float64) {
				if sums[name] == nil {
					sums[name] = &acc{}
				}
				sums[name].ms += float64(d.Microseconds()) / 1000
				sums[name].enc += enc
			}
			cpu0 := map[string][4]float64{}
			for v, p := range relays {
				cpu0[v] = [4]float64{cpuMS(p.cmd.Process.Pid), cpuMS(p.agentPID), switches(p.cmd.Process.Pid), switches(p.agentPID)}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// A fresh .sve name per picture, as Strata's are (the
				// picture's sha256): renaming or truncating over an existing
				// file would make ext4 (auto_da_alloc) write it to disk in
				// the middle of the measurement. Removed outside the clock.
				for _, v := range variants {
					out := filepath.Join(e.work, fmt.Sprintf("%s-%d.sve", v, i))
					t0 := time.Now()
					enc := relays[v].encode(b, img, out)
					add("relay-"+v, time.Since(t0), enc)
					os.Remove(out)
				}
				if relayOnly {
					continue
				}
				t0 := time.Now()
				floor(picSize, "")
				add("floor", time.Since(t0), 0)
				out := filepath.Join(e.work, fmt.Sprintf("floor-%d.sve", i))
				t0 = time.Now()
				floor(picSize, out)
				add("floor-file", time.Since(t0), 0)
				os.Remove(out)
				t0 = time.Now()
				enc := fair0(img)
				add("fair", time.Since(t0), enc)
				t0 = time.Now()
				enc = fairWarm(img)
				add("fair-warm", time.Since(t0), enc)
				t0 = time.Now()
				enc = naive(img)
				add("naive", time.Since(t0), enc)
			}
			b.StopTimer()
			n := float64(b.N)
			ms := func(name string) float64 { return sums[name].ms / n }
			enc := func(name string) float64 { return sums[name].enc / n }
			// Per relay: its time, its encoder's, and what it and its agent
			// used (also in a relay-only run).
			for _, v := range variants {
				p := relays[v]
				b.ReportMetric(ms("relay-"+v), v+"-relay-ms")
				b.ReportMetric(enc("relay-"+v), v+"-encode-ms")
				b.ReportMetric((cpuMS(p.cmd.Process.Pid)-cpu0[v][0])/n, v+"-relay-cpu-ms")
				b.ReportMetric((cpuMS(p.agentPID)-cpu0[v][1])/n, v+"-agent-cpu-ms")
				b.ReportMetric((switches(p.cmd.Process.Pid)-cpu0[v][2])/n, v+"-relay-switches")
				b.ReportMetric((switches(p.agentPID)-cpu0[v][3])/n, v+"-agent-switches")
			}
			if relayOnly {
				return
			}
			// Against the baselines.
			fl := ms("floor")
			for _, v := range variants {
				r := ms("relay-" + v)
				rEnc := enc("relay-" + v)
				b.ReportMetric((r-rEnc)/fl, v+"-relay/floor")
				b.ReportMetric((r-rEnc)/ms("floor-file"), v+"-relay/floorfile")
				b.ReportMetric(ms("fair")/r, v+"-fair/relay")
				b.ReportMetric(ms("fair-warm")/r, v+"-fairwarm/relay")
				b.ReportMetric(ms("naive")/r, v+"-naive/relay")
			}
			b.ReportMetric(fl, "floor-ms")
			b.ReportMetric(ms("floor-file"), "floorfile-ms")
			b.ReportMetric(ms("fair"), "fair-ms")
			b.ReportMetric(ms("fair-warm"), "fairwarm-ms")
			b.ReportMetric(ms("naive"), "naive-ms")
		})
	}
}

// BenchmarkRelayRSS: the relay's and the agent's resident memory after 8
// small pictures and after 8 more of 30 MiB (loopback; the shipped binaries).
func BenchmarkRelayRSS(b *testing.B) {
	e := setup(b, link{name: "loopback"})
	small, big := filepath.Join(e.work, "s.img"), filepath.Join(e.work, "b.img")
	writeFile(b, small, picture(picSize), 0o644)
	writeFile(b, big, picture(bigSize), 0o644)
	for i := 0; i < b.N; i++ {
		for _, v := range variants {
			p := e.startRelay(b, v)
			for k := 0; k < 8; k++ {
				p.encode(b, small, filepath.Join(e.work, v+".sve"))
			}
			rs, _ := rssMiB(p.cmd.Process.Pid)
			as, _ := rssMiB(p.agentPID)
			for k := 0; k < 8; k++ {
				p.encode(b, big, filepath.Join(e.work, v+".sve"))
			}
			rb, rh := rssMiB(p.cmd.Process.Pid)
			ab, ah := rssMiB(p.agentPID)
			b.ReportMetric(rs, v+"-relay-rss-small-MiB")
			b.ReportMetric(rb, v+"-relay-rss-30MiB-MiB")
			b.ReportMetric(rh, v+"-relay-hwm-MiB")
			b.ReportMetric(rb/rs, v+"-relay-rss-ratio")
			b.ReportMetric(as, v+"-agent-rss-small-MiB")
			b.ReportMetric(ab, v+"-agent-rss-30MiB-MiB")
			b.ReportMetric(ah, v+"-agent-hwm-MiB")
			b.ReportMetric(ab/as, v+"-agent-rss-ratio")
		}
	}
}

// BenchmarkRelayIdle: the relay's and the agent's CPU per minute while a
// connection is kept and no picture comes (loopback; after one picture, so
// the agent and its encoder run). The relay checks the connection every
// bounds.KeepaliveIdle (2 s); the agent checks its idle stop every second.
func BenchmarkRelayIdle(b *testing.B) {
	e := setup(b, link{name: "loopback"})
	img := filepath.Join(e.work, "p.img")
	writeFile(b, img, picture(picSize), 0o644)
	window := 20 * time.Second
	if s := os.Getenv("RELAYBENCH_IDLE_S"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			window = time.Duration(n) * time.Second
		}
	}
	for i := 0; i < b.N; i++ {
		relays := map[string]*relayProc{}
		for _, v := range variants {
			relays[v] = e.startRelay(b, v)
			relays[v].encode(b, img, filepath.Join(e.work, v+"-idle.sve"))
		}
		time.Sleep(2 * time.Second) // settle
		c0 := map[string][2]float64{}
		for v, p := range relays {
			c0[v] = [2]float64{cpuMS(p.cmd.Process.Pid), cpuMS(p.agentPID)}
		}
		time.Sleep(window)
		for v, p := range relays {
			perMin := 60 / window.Seconds()
			b.ReportMetric((cpuMS(p.cmd.Process.Pid)-c0[v][0])*perMin, v+"-relay-idle-ms/min")
			b.ReportMetric((cpuMS(p.agentPID)-c0[v][1])*perMin, v+"-agent-idle-ms/min")
		}
	}
}
