//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/testenv"
)

// `strata-service probe --ssh` against the Windows test PC (cmd.exe under
// wine behind a real sshd): the CLI's Windows branch end to end, OS and
// arch from ver, the GPU from the stand-in nvidia-smi.exe in System32, the
// link through sftp.
func TestProbeSSHCLIAgainstAWindowsPCIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	isolate(t)
	pc := testenv.StartWindowsPC(t, testenv.WindowsPCOptions{Wine: testenv.WineFor(t, nil)})
	pc.InstallNvidiaSMI(t)
	target := pc.User + "@" + pc.Addr()
	fp := ssh.FingerprintSHA256(pc.HostSigner.PublicKey())
	out, errOut, code := remoteCLI(t, "", "probe", "--ssh", target, "--identity", pc.ClientKeyFile, "--accept-host-key", fp, "--transfer-mb", "1", "--json")
	var j sshProbeOutput
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	t.Logf("%+v", j.Remote)
	if !j.Reachable || j.Remote.OS != "windows" || j.Remote.Arch != "amd64" || !strings.Contains(j.Remote.Uname, "Windows") ||
		len(j.Remote.GPUs) != 1 || j.Remote.GPUs[0].Name != "NVIDIA GeForce RTX 3060 Laptop GPU" || j.Remote.RTT <= 0 ||
		j.Remote.UpBytesPerSec <= 0 || j.Remote.DownBytesPerSec <= 0 || !j.Remote.Estimate.Available {
		t.Errorf("json report: %+v %+v", j, j.Remote)
	}
}

func waitWinProcs(t *testing.T, w *testenv.Wine, what, exe string, want bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if (len(w.Procs(exe)) > 0) == want {
			return
		}
	}
	t.Fatalf("%s: %s running %v, want running=%v", what, exe, w.Procs(exe), want)
}

// lineEncoder is an encoder process driven as Strata drives one: the first
// line READY, then one `ENC <img> <sve>` line per picture, one reply line.
type lineEncoder struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr syncBuf
}

// startEncoder starts exe as Strata does ([exe, --mmproj M, --model X,
// --max-tokens N], the server's environment plus env) and returns it once
// its first line, which must be READY <nEmbd>, was read.
func startEncoder(t *testing.T, exe string, env []string, nEmbd int, args ...string) *lineEncoder {
	t.Helper()
	e := &lineEncoder{cmd: exec.Command(exe, args...)}
	e.cmd.Env = append(os.Environ(), env...)
	e.cmd.Stderr = &e.stderr
	var err error
	if e.in, err = e.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.out = bufio.NewReader(out)
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.quit() })
	if l := e.line(); l != fmt.Sprintf("READY %d", nEmbd) {
		t.Fatalf("%s answered %q, want READY %d\n%s", exe, l, nEmbd, e.stderr.String())
	}
	return e
}

func (e *lineEncoder) line() string {
	l, _ := e.out.ReadString('\n')
	return strings.TrimRight(l, "\r\n")
}

func (e *lineEncoder) enc(img, sve string) string {
	fmt.Fprintf(e.in, "ENC %s %s\n", img, sve)
	return e.line()
}

// quit sends QUIT and waits for the exit (killed after 20 s, as Strata
// kills after its wait).
func (e *lineEncoder) quit() {
	if e.cmd.ProcessState != nil {
		return
	}
	fmt.Fprintln(e.in, "QUIT")
	e.in.Close()
	done := make(chan struct{})
	go func() { e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
}

// The CLI's whole path against the Windows test PC (cmd.exe under wine
// behind a real sshd), with no service running (the CLI hosts the settings'
// owner itself): `remote pair` (the companion's key installed by the
// uploaded Windows agent into administrators_authorized_keys; afterwards the
// user's own key is taken off that PC, so everything after logs in with the
// companion's key alone), `remote prepare` (the agent over sftp, mmproj and
// stub through it, the Windows stand-in encoder found there and READY),
// pictures through the built relay as Strata drives it (each .sve
// byte-identical to the stand-in's run here), the PC off (ERR) and back
// (OK), `remote idle-stop` (the relay hands it to its agent: the encoder
// stops, the next picture wakes it), `remote unpair` (our line gone, the rest of
// the file byte-identical, CRLF included).
func TestWindowsSecondPCThroughTheCLIIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	t0 := time.Now()
	// Nothing may be left in the temp folder or run on once the test and
	// its cleanups are done (registered first: this runs last). The temp
	// folder is this test's own, so other tests' files do not count.
	tmp, err := os.MkdirTemp("", "strata-winpc-cli-")
	if err != nil {
		t.Fatal(err)
	}
	var w *testenv.Wine
	t.Cleanup(func() {
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("left in the temp folder: %v", names)
		}
		os.RemoveAll(tmp)
		if w != nil {
			if left := w.Procs(""); len(left) != 0 {
				t.Errorf("processes of the wine prefix still running: %v", left)
			}
		}
	})
	t.Setenv("TMPDIR", tmp)
	isolate(t)
	w = testenv.WineFor(t, nil)
	pc := testenv.StartWindowsPC(t, testenv.WindowsPCOptions{Wine: w})
	winRelay := w.Build(t, "github.com/strata-companion/companion/relay")
	winStandin := w.Build(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	relayBin, standinBin := e2eBuild(t, t.TempDir())
	t.Logf("wine prefix, Windows PC and builds ready after %v", time.Since(t0))

	// The Windows PC already holds Strata's Windows encoder where prepare
	// looks (the default folder), and an administrators_authorized_keys
	// with other lines, written by Windows tools (CRLF).
	remoteDir := prepare.DefaultRemoteDir
	if err := testenv.CopyFile(winStandin, pc.Path(remoteDir+`\strata-vision.exe`), 0o755); err != nil {
		t.Fatal(err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	otherPub, _ := ssh.NewPublicKey(other)
	adminKeys := w.Drive(`ProgramData\ssh\administrators_authorized_keys`)
	os.MkdirAll(filepath.Dir(adminKeys), 0o755)
	seeded := "# keys of this PC's administrators\r\n" + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(otherPub))) + " admin@laptop\r\n\r\n"
	if err := os.WriteFile(adminKeys, []byte(seeded), 0o644); err != nil {
		t.Fatal(err)
	}

	// 1. remote pair, with the user's own key (the stand-in for their password).
	target := pc.User + "@" + pc.Addr()
	fp := ssh.FingerprintSHA256(pc.HostSigner.PublicKey())
	out, errOut, code := remoteCLI(t, "", "remote", "pair", target, "--identity", pc.ClientKeyFile, "--accept-host-key", fp,
		"--agent-binary", winRelay)
	if code != 0 || !strings.Contains(out, "Paired with "+target+" (windows/amd64)") || !strings.Contains(out, "administrators_authorized_keys") {
		t.Fatalf("pair: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "PowerShell") || strings.Contains(errOut, "powershell") {
		t.Errorf("pair went the PowerShell way:\n%s", errOut)
	}
	st, err := settings.LoadDefault()
	if err != nil || st.Remote == nil || st.Remote.KeyFile != locations.RelayKeyFile() || st.Remote.OS != "windows" {
		t.Fatalf("settings after pair: %+v %v", st, err)
	}
	pub, err := os.ReadFile(locations.RelayKeyFile() + ".pub")
	if err != nil {
		signer, err2 := sshx.LoadSigner(locations.RelayKeyFile(), nil)
		if err2 != nil {
			t.Fatalf("the companion's key: %v %v", err, err2)
		}
		pub = ssh.MarshalAuthorizedKey(signer.PublicKey())
	}
	keyField := strings.Fields(string(pub))[1]
	paired, _ := os.ReadFile(adminKeys)
	// Agent-only (the default): the gate, pinned to the file written. This
	// PC's sshd runs every command through its ForceCommand (the cmd.exe
	// stand-in), which wins over command=, so what follows runs as through
	// a shell key: the gate itself is not exercised on this Windows PC.
	if !strings.HasPrefix(string(paired), seeded) ||
		!strings.Contains(string(paired), `restrict,command="C:\users\`+pc.User+`\strata-companion\strata-vision-relay.exe gate --keys C:\ProgramData\ssh\administrators_authorized_keys" ssh-ed25519 `+keyField) {
		t.Fatalf("administrators_authorized_keys after pair:\n%q", paired)
	}
	// From now on the user's own key is refused there: the companion's key alone.
	if err := os.WriteFile(pc.AuthorizedKeysFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// 2. remote prepare: the agent, the mmproj and the stub go there; the
	//    encoder already there is found and answers READY.
	local := t.TempDir()
	mmproj, model := filepath.Join(local, "mmproj-test.gguf"), filepath.Join(local, "model-00001-of-00002.gguf")
	const nEmbd, nTokens = 16, 4
	if err := fakeencoder.WriteMmproj(mmproj, nEmbd); err != nil {
		t.Fatal(err)
	}
	fakeencoder.WriteModel(model, 10)
	tp := time.Now()
	out, errOut, code = remoteCLI(t, "", "remote", "prepare", "--mmproj", mmproj, "--model", model,
		"--agent-binary", winRelay, "--max-tokens", strconv.Itoa(nTokens))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("answered READY %d", nEmbd)) {
		t.Fatalf("prepare: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("prepare took %v:\n%s", time.Since(tp), errOut)
	st, _ = settings.LoadDefault()
	if r := st.Remote; r == nil || r.OS != "windows" || r.NEmbd != nEmbd || r.EncoderPath != "strata-vision.exe" ||
		!strings.EqualFold(r.RemoteDir, pc.Profile+`\`+remoteDir) || r.KeyFile != locations.RelayKeyFile() {
		t.Fatalf("settings after prepare: %+v", st.Remote)
	}
	rm, rmodel := remote.RemoteFiles(mmproj, model)
	for there, here := range map[string]string{remote.AgentName("windows"): winRelay, rm: mmproj} {
		a, _ := os.ReadFile(here)
		if b, err := os.ReadFile(pc.Path(remoteDir + `\` + there)); err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s on the Windows PC differs from this PC's (%v)", there, err)
		}
	}
	if fi, err := os.Stat(pc.Path(remoteDir + `\` + rmodel)); err != nil || fi.Size() == 0 {
		t.Errorf("the vocabulary stub %s is not on the Windows PC: %v", rmodel, err)
	}
	waitWinProcs(t, w, "after prepare", "strata-vision.exe", false)
	// The image tokens on the second PC are the companion's choice (the
	// relay leaves Strata's --max-tokens alone): chosen small, as here.
	st.Remote.MaxTokens = nTokens
	if err := st.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}

	// 3. Pictures through the built relay, started and driven as Strata
	//    does, each .sve compared with the stand-in encoder's run here.
	args := []string{"--mmproj", mmproj, "--model", model, "--max-tokens", strconv.Itoa(nTokens)}
	ref := startEncoder(t, standinBin, nil, nEmbd, args...)
	rl := startEncoder(t, relayBin, []string{strataconfig.EnvSettings + "=" + locations.SettingsFile()}, nEmbd, args...)
	strataTmp := filepath.Join(t.TempDir(), "strata-vision-x1y2")
	os.MkdirAll(strataTmp, 0o700)
	n := 0
	const mustOK, mustERR, either = 0, 1, 2
	picture := func(mode int) string {
		t.Helper()
		n++
		data := append([]byte("\xff\xd8\xff\xe0JFIF"), bytes.Repeat([]byte{byte(n)}, 3000+n*20000)...)
		sum := sha256.Sum256(data)
		base := filepath.Join(strataTmp, hex.EncodeToString(sum[:])[:32])
		img, sve := base+".img", base+".sve"
		os.WriteFile(img, data, 0o600)
		defer os.Remove(img) // Strata deletes the .img once the reply came
		reply := rl.enc(img, sve)
		if mode == either && strings.HasPrefix(reply, "ERR ") {
			return reply
		}
		if mode == mustERR {
			if !strings.HasPrefix(reply, "ERR ") {
				t.Fatalf("picture %d: %q, want ERR\n%s", n, reply, rl.stderr.String())
			}
			return reply
		}
		if !strings.HasPrefix(reply, fmt.Sprintf("OK %d ", nTokens)) {
			t.Fatalf("picture %d: %q\n%s", n, reply, rl.stderr.String())
		}
		if l := ref.enc(img, base+".ref"); !strings.HasPrefix(l, "OK ") {
			t.Fatalf("the stand-in here: %q", l)
		}
		got, err1 := os.ReadFile(sve)
		want, err2 := os.ReadFile(base + ".ref")
		if err1 != nil || err2 != nil || len(got) == 0 || !bytes.Equal(got, want) {
			t.Fatalf("picture %d: the .sve from the Windows PC (%d bytes, %v) differs from the stand-in's here (%d bytes, %v)", n, len(got), err1, len(want), err2)
		}
		return reply
	}
	tp = time.Now()
	for i := 0; i < 3; i++ {
		picture(mustOK)
	}
	t.Logf("3 pictures through the relay (the first with connect and encoder start) in %v", time.Since(tp))
	waitWinProcs(t, w, "while reading pictures", "strata-vision.exe", true)

	// 4. The second PC off: ERR at once; the idle stop is set meanwhile
	//    (the relay reads the settings per picture and hands a change to
	//    the agent it runs); back: OK.
	pc.SSHD.Stop()
	tp = time.Now()
	t.Logf("with the PC off: %s (after %v)", picture(mustERR), time.Since(tp))
	tp = time.Now()
	t.Logf("with the PC still off: %s (after %v)", picture(mustERR), time.Since(tp))
	if out, errOut, code := remoteCLI(t, "", "remote", "idle-stop", "3"); code != 0 {
		t.Fatalf("idle-stop: exit %d\n%s\n%s", code, out, errOut)
	}
	if st, _ := settings.LoadDefault(); st.Remote == nil || st.Remote.IdleStopS != 3 {
		t.Fatalf("settings after idle-stop: %+v", st.Remote)
	}
	// Back: the relay, which knows the PC is down, answers at once until its
	// background retry (every 2 s) reaches the PC again; then the next
	// picture is read, as a user sending pictures meets it.
	pc.SSHD.Start()
	tp = time.Now()
	errs := 0
	for reply := picture(either); strings.HasPrefix(reply, "ERR "); reply = picture(either) {
		if errs++; time.Since(tp) > 60*time.Second {
			t.Fatalf("the PC has been back for a minute and pictures still fail: %s\n%s", reply, rl.stderr.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("with the PC back, a picture was read after %v (%d answered ERR before the relay's retry reached it)", time.Since(tp), errs)

	// 5. The idle stop: the encoder ends after 3 s without pictures, the
	//    agent stays; the next picture wakes it.
	waitWinProcs(t, w, "after the idle stop", "strata-vision.exe", false)
	if len(w.Procs(remote.AgentName("windows"))) == 0 {
		t.Fatal("the agent ended with the encoder's idle stop")
	}
	tp = time.Now()
	picture(mustOK)
	t.Logf("a picture that woke the encoder took %v", time.Since(tp))
	waitWinProcs(t, w, "after the picture that woke it", "strata-vision.exe", true)

	// 6. Strata stops its encoder: the agent and the encoder end there.
	rl.quit()
	ref.quit()
	waitWinProcs(t, w, "after QUIT", remote.AgentName("windows"), false)
	waitWinProcs(t, w, "after QUIT", "strata-vision.exe", false)

	// 7. remote unpair, with the companion's key (the user's is refused now).
	out, errOut, code = remoteCLI(t, "", "remote", "unpair", "--agent-binary", winRelay)
	if code != 0 || !strings.Contains(out, "Unpaired") {
		t.Fatalf("unpair: exit %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(adminKeys); string(after) != seeded {
		t.Errorf("administrators_authorized_keys after unpair:\n%q\nwant\n%q", after, seeded)
	}
	if _, err := os.Stat(locations.RelayKeyFile()); !os.IsNotExist(err) {
		t.Error("the companion's key is still here")
	}
	if st, _ := settings.LoadDefault(); st != nil && st.Remote != nil && st.Remote.Host != "" {
		t.Errorf("settings after unpair: %+v", st.Remote)
	}
	t.Logf("the whole CLI path took %v", time.Since(t0))
}
