//go:build linux

package relay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// winProcs lists the pids of wine processes whose program (argv[0], the
// Windows path a Windows program's Linux process shows) ends in exe and
// whose command line holds all of words.
func winProcs(exe string, words ...string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		if otherWine(d) {
			continue // another test's wine (the installer's runs a relay too)
		}
		argv0, _, _ := strings.Cut(string(b), "\x00")
		if !strings.HasSuffix(strings.ToLower(argv0), strings.ToLower(exe)) {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(cl, w)
		}
		if ok {
			out = append(out, atoi(filepath.Base(d)))
		}
	}
	return out
}

// winPrefix is the Windows test PC's wine prefix: processes of another
// wine on this machine (another test binary's) are not this test's.
var winPrefix string

// otherWine: the process in /proc dir runs in a wine prefix other than
// winPrefix.
func otherWine(dir string) bool {
	if winPrefix == "" {
		return false
	}
	env, err := os.ReadFile(dir + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if p, ok := strings.CutPrefix(kv, "WINEPREFIX="); ok {
			return filepath.Clean(p) != filepath.Clean(winPrefix)
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func waitWinGone(t *testing.T, what string, exe string, words ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if len(winProcs(exe, words...)) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s still running: %v", what, winProcs(exe, words...))
}

// The whole second-PC path against the Windows test PC (cmd.exe under wine
// behind a real sshd): prepare (agent over sftp, with resume and checksum;
// the rest through the Windows agent .exe), pictures byte-identical through
// the relay with the Windows stand-in encoder under wine, the PC off and
// back, the idle stop, and the agent killed (its Job Object ends the encoder).
func TestWindowsSecondPCIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	pc := testenv.StartWindowsPC(t, testenv.WindowsPCOptions{})
	winPrefix = pc.Wine.Prefix
	t.Cleanup(func() { winPrefix = "" })
	winRelay := pc.Wine.Build(t, "github.com/strata-companion/companion/relay")
	winStandin := pc.Wine.Build(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	dir := "strata-companion-relaytest"
	t.Cleanup(func() { os.RemoveAll(pc.Path(dir)) })
	local := t.TempDir()
	mmproj, model := filepath.Join(local, "mmproj-test.gguf"), filepath.Join(local, "model-00001-of-00002.gguf")
	const nEmbd, nTokens = 16, 4
	if err := fakeencoder.WriteMmproj(mmproj, nEmbd); err != nil {
		t.Fatal(err)
	}
	fakeencoder.WriteModel(model, 10)
	pcRemote := settings.Remote{
		Host: pc.Host, Port: pc.Port, User: pc.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pc.HostSigner.PublicKey()))),
		KeyFile:   pc.ClientKeyFile,
		RemoteDir: dir,
	}

	// 1. The agent's sftp upload: resume a matching .part, restart a
	//    damaged one, skip a file already in place.
	c := pc.Dial(t)
	agentBytes, _ := os.ReadFile(winRelay)
	os.MkdirAll(pc.Path(dir), 0o755)
	agentAt := pc.Path(dir + `\` + remote.AgentName("windows"))
	os.WriteFile(agentAt+".part", agentBytes[:len(agentBytes)/2], 0o644)
	var log syncBuffer
	up, err := prepare.UploadSFTP(context.Background(), c, winRelay, dir+"/"+remote.AgentName("windows"), &log)
	if err != nil || !up || !strings.Contains(log.String(), "resuming "+remote.AgentName("windows")) {
		t.Fatalf("resume: %v %v\n%s", up, err, log.String())
	}
	if b, _ := os.ReadFile(agentAt); !bytes.Equal(b, agentBytes) {
		t.Fatal("the resumed agent differs")
	}
	if up, err := prepare.UploadSFTP(context.Background(), c, winRelay, dir+"/"+remote.AgentName("windows"), nil); err != nil || up {
		t.Fatalf("an agent already in place was uploaded again: %v %v", up, err)
	}
	bad := append([]byte(nil), agentBytes[:1000]...)
	bad[10] ^= 0xff
	os.Remove(agentAt)
	os.WriteFile(agentAt+".part", bad, 0o644)
	log = syncBuffer{}
	if _, err := prepare.UploadSFTP(context.Background(), c, winRelay, prepare.SFTPPath("windows", dir+`\`+remote.AgentName("windows")), &log); err != nil || strings.Contains(log.String(), "resuming") {
		t.Fatalf("a damaged .part: %v\n%s", err, log.String())
	}
	if b, _ := os.ReadFile(agentAt); !bytes.Equal(b, agentBytes) {
		t.Fatal("the agent after a damaged .part differs")
	}
	if _, err := os.Stat(agentAt + ".part"); err == nil {
		t.Fatal("a .part was left behind")
	}
	os.Remove(agentAt) // prepare installs it itself below

	// 2. Prepare: OS and arch from cmd.exe, agent over sftp, the mmproj,
	//    the vocabulary stub and the Windows encoder through the agent.
	log = syncBuffer{}
	t0 := time.Now()
	res, err := prepare.Prepare(context.Background(), prepare.Options{
		Remote: pcRemote, Mmproj: mmproj, Model: model,
		AgentBinary: func(goos, goarch string) (string, error) {
			if goos != "windows" || goarch != "amd64" {
				t.Errorf("asked for an agent for %s/%s", goos, goarch)
			}
			return winRelay, nil
		},
		LocalEncoder: winStandin, LocalOS: "windows", LocalArch: "amd64",
		MaxTokens: nTokens, Progress: &log,
	})
	if err != nil {
		t.Fatalf("prepare: %v\n%s", err, log.String())
	}
	t.Logf("prepare took %v:\n%s", time.Since(t0), log.String())
	if res.OS != "windows" || res.Arch != "amd64" || res.NEmbd != nEmbd || res.EncoderPath != "strata-vision.exe" ||
		!strings.EqualFold(res.RemoteDir, pc.Profile+`\`+dir) {
		t.Fatalf("result %+v", res)
	}
	if b, _ := os.ReadFile(agentAt); !bytes.Equal(b, agentBytes) {
		t.Fatal("the agent prepare installed differs")
	}
	waitWinGone(t, "the agent after prepare", remote.AgentName("windows"), "agent")
	waitWinGone(t, "the encoder after prepare", "strata-vision.exe")
	// Prepare's agent used the default scratch folder, in %TEMP%, and removed it.
	sess, _ := c.NewSession()
	tempWin, _ := sess.Output("echo %TEMP%")
	sess.Close()
	temp := pc.Path(strings.TrimSpace(string(tempWin)))
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("no %%TEMP%% at %s: %v", temp, err)
	}
	if left, _ := filepath.Glob(filepath.Join(temp, "strata-vision-relay-*")); len(left) != 0 {
		t.Errorf("prepare's agent left its scratch folder in %%TEMP%%: %v", left)
	}

	// 3. Pictures through the relay, as Strata drives it.
	scratch := pc.Profile + `\relaytest-scratch`
	os.MkdirAll(pc.Path(scratch), 0o755)
	t.Cleanup(func() { os.RemoveAll(pc.Path(scratch)) })
	rm, rmodel := remote.RemoteFiles(mmproj, model)
	args := remote.AgentArgs{OS: "windows", RemoteDir: res.RemoteDir, Encoder: res.EncoderPath, Mmproj: rm, Model: rmodel,
		MaxTokens: nTokens, IdleStopS: 3}
	stderr := &syncBuffer{}
	mk := &secondPC{nEmbd: nEmbd, stderr: stderr, remote: pcRemote}
	s := mk.startRelay(t, Options{AgentCommand: mustQuote(t, "windows", append(args.Argv(), "--scratch", scratch)),
		RequestTimeout: 60 * time.Second, ConnectTimeout: 20 * time.Second, HelloTimeout: 60 * time.Second})
	work := t.TempDir()
	logScratch := func(when string) {
		var names []string
		filepath.Walk(pc.Path(scratch), func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				names = append(names, strings.TrimPrefix(p, pc.Path(scratch)))
			}
			return nil
		})
		t.Logf("%s: scratch %v, agents %v", when, names, winProcs(remote.AgentName("windows"), "agent"))
	}
	check := func(i, size int) {
		t.Helper()
		img, sve, data := picture(t, work, i, size)
		if l := s.enc(img, sve); !strings.HasPrefix(l, "OK 4 2 2 ") {
			t.Fatalf("picture %d: %q\n%s", i, l, stderr)
		}
		if got, err := os.ReadFile(sve); err != nil || !bytes.Equal(got, fakeencoder.SVE(data, nTokens, nEmbd)) {
			t.Fatalf("picture %d: the .sve differs from the encoder's (%d bytes, %v)", i, len(got), err)
		}
		os.Remove(img)
	}
	t0 = time.Now()
	for i := 0; i < 3; i++ {
		check(i, 5000+i*100000)
	}
	t.Logf("3 pictures (first with connect and encoder start) in %v", time.Since(t0))

	// 4. Idle stop: the encoder ends after 3 s without pictures, the agent stays.
	waitWinGone(t, "the encoder after the idle stop", "strata-vision.exe")
	if len(winProcs(remote.AgentName("windows"), "agent")) == 0 {
		t.Fatal("the agent ended with the idle stop")
	}
	check(10, 2000) // wakes it

	// 5. The agent killed: its Job Object ends the encoder with it.
	agents := winProcs(remote.AgentName("windows"), "agent")
	if len(agents) == 0 || len(winProcs("strata-vision.exe")) == 0 {
		t.Fatalf("agent %v, encoder %v", agents, winProcs("strata-vision.exe"))
	}
	for _, pid := range agents {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitWinGone(t, "the encoder after its agent was killed (the Job Object should end it)", "strata-vision.exe")
	logScratch("killed")
	// The relay may not have seen the session end yet (cmd.exe, the
	// agent's parent, outlives it a moment): then this picture is the
	// agent's ERR saying the next one starts it again.
	img, sve, _ := picture(t, work, 12, 1000)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "OK ") && !strings.Contains(l, "the next picture starts it again") {
		t.Fatalf("the first picture after the agent was killed: %q", l)
	}
	check(11, 3000)
	logScratch("after the next picture")

	// 6. The second PC off and back.
	pc.SSHD.Stop()
	img, sve, _ = picture(t, work, 20, 1000)
	if l := s.enc(img, sve); !strings.HasPrefix(l, "ERR ") {
		t.Fatalf("with the second PC off: %q", l)
	}
	logScratch("PC off")
	pc.SSHD.Start()
	check(21, 1500)
	logScratch("PC back")

	t0 = time.Now()
	s.quit()
	waitWinGone(t, "the agent after QUIT", remote.AgentName("windows"))
	t.Logf("the agent ended %v after QUIT", time.Since(t0))
	waitWinGone(t, "the encoder after QUIT", "strata-vision.exe")
	kinds := map[events.Kind]int{}
	for _, e := range stderr.events() {
		kinds[e.Kind]++
	}
	t.Logf("events %v", kinds)
	if kinds[events.EncoderIdleStopped] < 1 || kinds[events.RemoteUnreachable]+kinds[events.RemoteDisconnected] < 1 {
		t.Errorf("events %v\n%s", kinds, stderr)
	}
	logScratch("after QUIT")
	// The scratch folders: the killed agent's is removed by the next one,
	// the last one's by itself.
	if ents, _ := os.ReadDir(pc.Path(scratch)); len(ents) != 0 {
		t.Errorf("scratch left on the second PC: %v\n%s", ents, stderr)
	}
}
