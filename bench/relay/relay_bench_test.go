//go:build linux

// Package relaybench measures the remote-vision relay: per-picture time
// through relay, agent, a real sshd and the stand-in encoder (1024 tokens x
// n_embd 2560: a 10 MB .sve, as on a GPU), on loopback and behind shaped
// links (tbf rate limit in a network namespace plus a delaying TCP proxy),
// against the link's own limit and against plain OpenSSH (scp the picture,
// ssh one ENC, scp the result back). Run it with bench/relay/run.sh.
package relaybench

import (
	"context"
	"fmt"
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
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

const (
	nTokens = 1024
	nEmbd   = 2560
	picSize = 300 << 10 // a typical 1024x1024 JPEG
	sveSize = 20 + 4*nTokens*nEmbd
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func binaries(b *testing.B) (relayBin, standin string) {
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "relay-bench-bin-")
		for out, pkg := range map[string]string{"strata-vision-relay": "../../relay", "standin": "../../internal/fakeencoder/cmd/strata-vision-standin"} {
			if o, err := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(binDir, out), pkg).CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, o)
				return
			}
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return filepath.Join(binDir, "strata-vision-relay"), filepath.Join(binDir, "standin")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
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

// setup makes the second PC for l and returns the address to dial.
type env struct {
	sshd      *testenv.SSHD
	host      string
	port      int
	remoteDir string
	mmproj    string // local
	model     string
	picture   []byte
	work      string
	knownHost string // a known_hosts file for OpenSSH
}

func setup(b *testing.B, l link) *env {
	if testing.Short() {
		b.Skip("starts sshd")
	}
	relayBin, standin := binaries(b)
	e := &env{remoteDir: b.TempDir(), work: b.TempDir()}
	opts := testenv.SSHDOptions{}
	if l.rateMbit > 0 {
		n := testenv.NewNetns(b, testenv.NetnsOptions{RateMbit: l.rateMbit})
		opts = testenv.SSHDOptions{Netns: n.Name, ListenHost: n.PeerAddr}
	}
	e.sshd = testenv.StartSSHD(b, opts)
	e.host, e.port = e.sshd.Host, e.sshd.Port
	if l.oneWay > 0 {
		addr := testenv.StartDelayProxy(b, e.sshd.Addr(), l.oneWay)
		i := strings.LastIndexByte(addr, ':')
		e.host = addr[:i]
		e.port, _ = strconv.Atoi(addr[i+1:])
	}
	local := b.TempDir()
	e.mmproj, e.model = filepath.Join(local, "mmproj.gguf"), filepath.Join(local, "model-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(e.mmproj, nEmbd)
	fakeencoder.WriteModel(e.model, 100)
	rm, rmodel := relay.RemoteFiles(e.mmproj, e.model)
	cp := func(from, to string, mode os.FileMode) {
		d, _ := os.ReadFile(from)
		os.WriteFile(to, d, mode)
	}
	cp(e.mmproj, filepath.Join(e.remoteDir, rm), 0o644)
	cp(e.model, filepath.Join(e.remoteDir, rmodel), 0o644)
	cp(relayBin, filepath.Join(e.remoteDir, "strata-vision-relay"), 0o755)
	cp(standin, filepath.Join(e.remoteDir, "strata-vision"), 0o755)
	e.picture = make([]byte, picSize)
	copy(e.picture, "\xff\xd8\xff\xe0")
	for i := 4; i < len(e.picture); i++ {
		e.picture[i] = byte(i * 7)
	}
	hostPat := fmt.Sprintf("[%s]:%d", e.host, e.port)
	e.knownHost = filepath.Join(local, "known_hosts")
	os.WriteFile(e.knownHost, []byte(hostPat+" "+string(ssh.MarshalAuthorizedKey(e.sshd.HostSigner.PublicKey()))), 0o600)
	return e
}

// linkLimitMS is what the link itself allows for one picture: the bytes
// both ways at its rate, one round trip, and the encoder's own time.
func linkLimitMS(l link, encodeMS float64) float64 {
	return float64(picSize+sveSize)*8/float64(l.rateMbit*1e6)*1000 + 2*float64(l.oneWay.Microseconds())/1000 + encodeMS
}

// BenchmarkRelay runs, per link, pictures through the relay and through the
// OpenSSH recipe in turn (relay, recipe, relay, recipe...), so a machine
// whose speed drifts affects both alike. ns/op is one of each.
func BenchmarkRelay(b *testing.B) {
	testenv.LookPath(b, "ssh", "scp")
	for _, l := range links {
		b.Run(l.name, func(b *testing.B) {
			e := setup(b, l)
			viaRelay := e.relay(b)
			viaOpenSSH := e.openSSH(b)
			viaRelay() // connect, start the agent and the encoder: not measured
			viaOpenSSH()
			b.ResetTimer()
			var rt, ot time.Duration
			var renc, oenc float64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				renc += viaRelay()
				t1 := time.Now()
				oenc += viaOpenSSH()
				rt, ot = rt+t1.Sub(t0), ot+time.Since(t1)
			}
			b.StopTimer()
			n := float64(b.N)
			rms, oms := float64(rt.Microseconds())/1000/n, float64(ot.Microseconds())/1000/n
			renc, oenc = renc/n, oenc/n
			b.ReportMetric(rms, "relay-ms")
			b.ReportMetric(renc, "encode-ms")
			b.ReportMetric(rms-renc, "relay-overhead-ms")
			b.ReportMetric(oms, "openssh-ms")
			b.ReportMetric(oms-oenc, "openssh-overhead-ms")
			b.ReportMetric((oms-oenc)/(rms-renc), "overhead-ratio")
			if l.rateMbit > 0 {
				limit := linkLimitMS(l, renc)
				b.ReportMetric(limit, "limit-ms")
				b.ReportMetric(100*(rms-limit)/limit, "%over-limit")
			}
		})
	}
}

// relay returns a function that reads one picture through the relay and
// returns the encoder's own ms.
func (e *env) relay(b *testing.B) func() float64 {
	args := relay.AgentArgs{OS: "linux", RemoteDir: e.remoteDir, Encoder: "strata-vision", MaxTokens: nTokens, GPU: true}
	args.Mmproj, args.Model = relay.RemoteFiles(e.mmproj, e.model)
	r := relay.New(relay.Options{
		Host: e.host, AgentCommand: args.Command(), NEmbd: nEmbd,
		Dial: relay.SSHDialer(settings.Remote{Host: e.host, Port: e.port, User: e.sshd.User,
			HostKey: string(ssh.MarshalAuthorizedKey(e.sshd.HostSigner.PublicKey())), KeyFile: e.sshd.ClientKeyFile}),
	})
	b.Cleanup(r.Close)
	img, out := filepath.Join(e.work, "r.img"), filepath.Join(e.work, "r.sve")
	os.WriteFile(img, e.picture, 0o600)
	return func() float64 {
		line := r.Encode(context.Background(), img, out)
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "OK" {
			b.Fatalf("relay: %s", line)
		}
		ms, _ := strconv.ParseFloat(f[4], 64)
		return ms
	}
}

// openSSH is the hand-made recipe: three OpenSSH commands per picture, each
// a new connection (scp the picture, ssh one ENC to the encoder, scp back).
func (e *env) openSSH(b *testing.B) func() float64 {
	common := []string{"-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + e.knownHost, "-o", "StrictHostKeyChecking=yes",
		"-o", "LogLevel=ERROR", "-i", e.sshd.ClientKeyFile}
	target := e.sshd.User + "@" + e.host
	img := filepath.Join(e.work, "o.img")
	os.WriteFile(img, e.picture, 0o600)
	rm, rmodel := relay.RemoteFiles(e.mmproj, e.model)
	rin, rout := filepath.Join(e.remoteDir, "o.img"), filepath.Join(e.remoteDir, "o.sve")
	encCmd := fmt.Sprintf("printf 'ENC %s %s\\nQUIT\\n' | %s/strata-vision --mmproj %s/%s --model %s/%s --gpu --max-tokens %d",
		rin, rout, e.remoteDir, e.remoteDir, rm, e.remoteDir, rmodel, nTokens)
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	port := strconv.Itoa(e.port)
	// -O: the classic scp protocol (the test sshd has no sftp subsystem).
	scp := append([]string{"-q", "-O", "-P", port}, common...)
	sshArgs := append([]string{"-p", port}, common...)
	return func() float64 {
		run("scp", append(append([]string{}, scp...), img, target+":"+rin)...)
		out := run("ssh", append(append([]string{}, sshArgs...), target, encCmd)...)
		run("scp", append(append([]string{}, scp...), target+":"+rout, filepath.Join(e.work, "o.sve"))...)
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == "OK" {
				ms, _ := strconv.ParseFloat(f[4], 64)
				return ms
			}
		}
		b.Fatalf("remote encoder: %s", out)
		return 0
	}
}
