//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// lanPC is one PC of the test's home network: a LAN host with a companion
// folder of its own. Every program that may send multicast (lend, remote
// find) runs only inside such a host, never in this machine's own network.
type lanPC struct {
	h    *testenv.LANHost
	home string
	path string
}

func (pc lanPC) cmd(bin string, args ...string) *exec.Cmd {
	c := pc.h.Command(bin, args...)
	c.Env = []string{locations.EnvHome + "=" + pc.home, "HOME=" + pc.home, "PATH=" + pc.path + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	return c
}

func (pc lanPC) run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	c := pc.cmd(bin, args...)
	var o, e strings.Builder
	c.Stdout, c.Stderr = &o, &e
	c.WaitDelay = 5 * time.Second
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { c.Process.Kill() })
	defer timer.Stop()
	err := c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// lenderProc is `lend --foreground --json` running in a LAN host.
type lenderProc struct {
	cmd    *exec.Cmd
	code   string
	stderr *testenv.Buffer
	exited chan error
}

func startLender(t *testing.T, pc lanPC, bin string, args ...string) *lenderProc {
	t.Helper()
	c := pc.cmd(bin, append([]string{"lend", "--foreground", "--json"}, args...)...)
	p := &lenderProc{cmd: c, stderr: &testenv.Buffer{}, exited: make(chan error, 1)}
	c.Stderr = p.stderr
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); <-p.exited })
	lines := make(chan string, 4)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		p.exited <- c.Wait()
	}()
	l := testenv.Receive(t, lines, 60*time.Second, "the lender's code line\n"+p.stderr.String())
	var v struct{ Code, Name, Expires string }
	if err := json.Unmarshal([]byte(l), &v); err != nil || v.Code == "" || v.Name == "" || v.Expires == "" {
		t.Fatalf("lend --json printed %q (%v)\n%s", l, err, p.stderr.String())
	}
	p.code = v.Code
	testenv.WaitFor(t, 30*time.Second, "the lender's pairing port", func() bool {
		return strings.Contains(p.stderr.String(), "announc") || dialable(pc.h, 7390)
	})
	return p
}

func dialable(h *testenv.LANHost, port int) bool {
	c, err := h.Dial("tcp", net.JoinHostPort(h.Addr, fmt.Sprint(port)), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

type found struct {
	Name    string `json:"name"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	HostKey string `json:"host_key"`
	Paired  bool   `json:"paired"`
	GPUs    []struct {
		Name     string `json:"name"`
		TotalMiB int    `json:"total_mib"`
	} `json:"gpus"`
}

func find(t *testing.T, pc lanPC, bin string) []found {
	t.Helper()
	out, errOut, code := pc.run(t, bin, "remote", "find", "--json", "--wait", "3s")
	var list []found
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("remote find: exit %d\n%s\n%s", code, out, errOut)
	}
	return list
}

// The check, on a home network of its own (this PC, the lender, an
// impostor announcing the same name): found, paired with the code alone,
// the impostor and wrong / reused / burned / expired codes refused with
// nothing changed, the address path without multicast, the first picture
// read on the lent GPU, the lender ended (unlisted, pictures go on), and
// lend stop (ERR on the next picture, keys out, the ssh server as before).
func TestLendAndPairWithACodeIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a LAN of network namespaces, starts sshd, lenders and the relay")
	}
	lan := testenv.NewLAN(t, 3)
	bins := relayBins(t)
	svc := testenv.Program(t, "github.com/strata-companion/companion/service", testenv.BuildOptions{Dir: bins, Name: "strata-service"})
	relayBin := filepath.Join(bins, "strata-vision-relay")
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	me := lanPC{lan.Hosts[0], t.TempDir(), ""}
	laptop := lanPC{lan.Hosts[1], t.TempDir(), smi}
	impostor := lanPC{lan.Hosts[2], t.TempDir(), smi}

	// The laptop's owner, with a line of their own in authorized_keys, and
	// an ssh server that already runs (lend must leave it as it is).
	owner, other := testenv.NewUser(t), testenv.NewUser(t)
	own := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnKeyOfTheOwnerxxxxxxxxxxxxxxxxxxxxxxxx owner@phone\r\n"
	os.MkdirAll(filepath.Join(owner.Home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(owner.Home, ".ssh", "authorized_keys"), []byte(own), 0o600)
	chownR(t, filepath.Join(owner.Home, ".ssh"), owner.Name)
	sshdOpts := func(h *testenv.LANHost) testenv.SSHDOptions {
		return testenv.SSHDOptions{Netns: h.Name, ListenHost: h.Addr, PathDirs: []string{smi}, AuthorizedKeysFiles: []string{".ssh/authorized_keys"}}
	}
	sshd := testenv.StartSSHD(t, sshdOpts(laptop.h))
	fakeSSHD := testenv.StartSSHD(t, sshdOpts(impostor.h))
	sshPort := func(s *testenv.SSHD) string { return fmt.Sprint(s.Port) }

	// The user's path is timed (bench/lend/first-picture.sh reads these
	// lines); the refusals the test adds between its steps are not.
	timed := map[string]time.Duration{}
	clock := func(step string, since time.Time) { timed[step] = time.Since(since) }
	t0 := time.Now()
	lendr := startLender(t, laptop, svc, "--user", owner.Name, "--name", "gaming-laptop", "--ssh-port", sshPort(sshd), "--agent-binary", relayBin)
	clock("lend (code shown, pairing port open)", t0)
	startLender(t, impostor, svc, "--user", other.Name, "--name", "gaming-laptop", "--ssh-port", sshPort(fakeSSHD), "--agent-binary", relayBin)
	realFP := ssh.FingerprintSHA256(sshd.HostSigner.PublicKey())

	// The owner (and only they) can read the code, for their tray.
	shown := lendshown.File(owner.Home)
	if b, err := os.ReadFile(shown); err != nil || !strings.Contains(string(b), lendr.code) {
		t.Errorf("the owner's view %s: %v\n%s", shown, err, b)
	}
	if fi, err := os.Stat(shown); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != accountUID(t, owner.Name) {
		t.Errorf("the owner's view: %v %v", fi, err)
	}

	// Found within the wait: both announce the name, with their own host keys.
	var list []found
	t0 = time.Now()
	testenv.WaitFor(t, 30*time.Second, "both lenders listed", func() bool { list = find(t, me, svc); return len(list) == 2 })
	clock("remote find (3 s wait)", t0)
	for _, f := range list {
		if f.Name != "gaming-laptop" || len(f.GPUs) != 1 || f.GPUs[0].TotalMiB <= 0 || f.Paired {
			t.Errorf("listed %+v", f)
		}
		if (f.Host == laptop.h.Addr) != (f.HostKey == realFP) {
			t.Errorf("%s announces host key %s (the laptop's is %s)", f.Host, f.HostKey, realFP)
		}
	}

	pair := func(code, target string) (string, string, int) {
		return me.run(t, svc, "remote", "pair", "--code", code, "--allow-encoder", filepath.Join(bins, "standin"), target)
	}
	settingsFile := filepath.Join(me.home, "settings.json")
	nothingPaired := func(when string) {
		t.Helper()
		if st, err := settings.Load(settingsFile); err == nil && st.Remote != nil {
			t.Fatalf("%s: this PC recorded %+v", when, st.Remote)
		}
		if b, _ := os.ReadFile(filepath.Join(owner.Home, ".ssh", "authorized_keys")); string(b) != own {
			t.Fatalf("%s: the laptop's authorized_keys changed:\n%q", when, b)
		}
	}
	// A wrong code: refused, one try used, nothing changed.
	wrong := "2222-2222"
	if lendr.code == wrong {
		wrong = "3333-3333"
	}
	if _, e, code := pair(wrong, laptop.h.Addr); code != 1 || !strings.Contains(e, "not the one that PC shows") || !strings.Contains(e, "4 more tries") {
		t.Fatalf("wrong code: exit %d\n%s", code, e)
	}
	nothingPaired("after a wrong code")
	// The impostor's address with the real code: it cannot prove the code.
	if _, e, code := pair(lendr.code, impostor.h.Addr); code != 1 || !strings.Contains(e, "not the one that PC shows") {
		t.Fatalf("the impostor: exit %d\n%s", code, e)
	}
	nothingPaired("after the impostor")

	// By name, with the code alone: the impostor (same name) is told apart.
	t0 = time.Now()
	out, e, code := pair(lendr.code, "gaming-laptop")
	clock("remote pair --code NAME", t0)
	if code != 0 || !strings.Contains(out, "Paired with "+owner.Name+"@"+laptop.h.Addr) {
		t.Fatalf("pair by name: exit %d\n%s\n%s", code, out, e)
	}
	st, err := settings.Load(settingsFile)
	if err != nil || st.Remote == nil || st.Remote.Host != laptop.h.Addr || st.Remote.Port != sshd.Port || st.Remote.User != owner.Name ||
		st.Remote.HostKey != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostSigner.PublicKey()))) || st.Remote.MAC == "" {
		t.Fatalf("recorded %+v (%v)", st.Remote, err)
	}
	ak, _ := os.ReadFile(filepath.Join(owner.Home, ".ssh", "authorized_keys"))
	agentDir := filepath.Join(owner.Home, "strata-companion")
	if !strings.HasPrefix(string(ak), own) || !strings.Contains(string(ak), `restrict,command="`+filepath.Join(agentDir, "strata-vision-relay")+` gate --allow `) {
		t.Fatalf("authorized_keys after pairing:\n%s", ak)
	}
	if fi, err := os.Stat(filepath.Join(owner.Home, ".ssh", "authorized_keys")); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != accountUID(t, owner.Name) {
		t.Errorf("authorized_keys mode/owner: %v %v", fi.Mode(), err)
	}
	// Listed as paired now; lend status says what lending changed and who is paired.
	for _, f := range find(t, me, svc) {
		if f.Paired != (f.Host == laptop.h.Addr) {
			t.Errorf("after pairing, listed %+v", f)
		}
	}
	if out, e, code := laptop.run(t, svc, "lend", "status"); code != 0 || !strings.Contains(out, "left exactly as it was") ||
		!strings.Contains(out, "paired: ") || !strings.Contains(out, agentDir) || strings.Contains(out, lendr.code) {
		t.Errorf("lend status: exit %d\n%s\n%s", code, out, e)
	}
	// Reused: the code paired once; it pairs nothing again.
	if _, e, code := pair(lendr.code, laptop.h.Addr); code != 1 || !strings.Contains(e, "used already") {
		t.Fatalf("reused code: exit %d\n%s", code, e)
	}
	// The code is nowhere but in the root-only record: not in the lender's
	// log, not readable by another account.
	if strings.Contains(lendr.stderr.String(), lendr.code) || strings.Contains(lendr.stderr.String(), strings.ReplaceAll(lendr.code, "-", "")) {
		t.Errorf("the lender's log holds the code:\n%s", lendr.stderr.String())
	}
	rec := filepath.Join(laptop.home, "secrets", "lend.json")
	if fi, err := os.Stat(rec); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the lending record %s: %v %v", rec, fi, err)
	}

	// Burned: a new code, five wrong tries, and then the right one is dead.
	newCode := func(extra ...string) string {
		out, e, code := laptop.run(t, svc, append([]string{"lend", "code", "--json"}, extra...)...)
		var v struct{ Code string }
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("lend code: exit %d\n%s\n%s", code, out, e)
		}
		return v.Code
	}
	c2 := newCode()
	for i := 0; i < 5; i++ {
		pair(wrong, laptop.h.Addr)
	}
	if _, e, code := pair(c2, laptop.h.Addr); code != 1 || !strings.Contains(e, "stopped working after 5 wrong tries") || !strings.Contains(e, "lend code") {
		t.Fatalf("burned code: exit %d\n%s", code, e)
	}
	// Expired.
	c3 := newCode("--code-valid", "1s")
	deadline := time.Now().Add(1500 * time.Millisecond)
	testenv.WaitFor(t, 10*time.Second, "the code's expiry", func() bool { return time.Now().After(deadline) })
	if _, e, code := pair(c3, laptop.h.Addr); code != 1 || !strings.Contains(e, "expired") {
		t.Fatalf("expired code: exit %d\n%s", code, e)
	}

	// No multicast: nothing is found, and the address typed by hand pairs.
	if err := lan.BlockMulticast(); err != nil {
		t.Fatal(err)
	}
	if l := find(t, me, svc); len(l) != 0 {
		t.Fatalf("found %+v with multicast blocked", l)
	}
	c4 := newCode()
	if out, e, code := pair(c4, laptop.h.Addr); code != 0 || !strings.Contains(out, "Paired") {
		t.Fatalf("pair by address: exit %d\n%s\n%s", code, out, e)
	}
	lan.RestoreMulticast()

	// The first picture, read on the lent GPU: prepare through the agent-only
	// key, then the relay as Strata starts it.
	local := t.TempDir()
	mm, model := filepath.Join(local, "mmproj.gguf"), filepath.Join(local, "m-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(mm, 48)
	fakeencoder.WriteModel(model, 30)
	t0 = time.Now()
	if out, e, code := me.run(t, svc, "remote", "prepare", "--mmproj", mm, "--model", model, "--local-encoder", filepath.Join(bins, "standin"), "--max-tokens", "4"); code != 0 || !strings.Contains(out, "answered READY 48") {
		t.Fatalf("prepare: exit %d\n%s\n%s", code, out, e)
	}
	clock("remote prepare", t0)
	st, _ = settings.Load(settingsFile)
	st.Vision = settings.PlacementRemote
	if err := st.Save(settingsFile); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	r := startRelayIn(t, me, relayBin, mm, model)
	img := filepath.Join(local, "a.img")
	picture := func(shade uint8) {
		m := image.NewGray(image.Rect(0, 0, 8, 8))
		for i := range m.Pix {
			m.Pix[i] = shade
		}
		f, _ := os.Create(img)
		png.Encode(f, m)
		f.Close()
	}
	picture(10)
	if l := r.enc(t, img, filepath.Join(local, "a.sve")); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("the first picture: %q\n%s", l, r.stderr.String())
	}
	clock("relay start and first picture", t0)
	var total time.Duration
	for _, step := range []string{"lend (code shown, pairing port open)", "remote find (3 s wait)", "remote pair --code NAME", "remote prepare", "relay start and first picture"} {
		t.Logf("bench: %-40s %8.0f ms", step, float64(timed[step].Microseconds())/1000)
		total += timed[step]
	}
	t.Logf("bench: %-40s %8.0f ms", "lend to first picture (sum)", float64(total.Microseconds())/1000)

	// The lender ended: unlisted within the wait, and pictures go on.
	lendr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-lendr.exited:
		if err != nil {
			t.Errorf("the lender ended with %v after SIGTERM (want exit 0)", err)
		}
		lendr.exited <- err
	case <-time.After(5 * time.Second):
		t.Fatal("the lender did not end within 5 s of SIGTERM")
	}
	for _, f := range find(t, me, svc) {
		if f.Host == laptop.h.Addr {
			t.Errorf("the ended lender is still listed: %+v", f)
		}
	}
	picture(20)
	if l := r.enc(t, img, filepath.Join(local, "b.sve")); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("a picture after the lender ended: %q", l)
	}

	// lend stop: the next picture is refused, the keys are out (the owner's
	// own line byte for byte), the agent folder gone, sshd still running.
	if out, e, code := laptop.run(t, svc, "lend", "stop"); code != 0 || !strings.Contains(out, "Stopped lending") {
		t.Fatalf("lend stop: exit %d\n%s\n%s", code, out, e)
	}
	if b, _ := os.ReadFile(filepath.Join(owner.Home, ".ssh", "authorized_keys")); string(b) != own {
		t.Errorf("authorized_keys after lend stop:\n%q\nwant\n%q", b, own)
	}
	if _, err := os.Stat(agentDir); !os.IsNotExist(err) {
		t.Errorf("the agent folder is still there: %v", err)
	}
	for _, f := range []string{rec, shown} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there after lend stop: %v", f, err)
		}
	}
	// The agent's temp folder over ssh is /tmp (sshd sets no TMPDIR).
	if left, _ := filepath.Glob("/tmp/strata-vision-relay-*"); len(left) > 0 {
		for _, d := range left {
			if fi, err := os.Stat(d); err == nil && fi.Sys().(*syscall.Stat_t).Uid == accountUID(t, owner.Name) {
				t.Errorf("lend stop left the ended agent's scratch folder %s", d)
			}
		}
	}
	if !dialable(laptop.h, sshd.Port) {
		t.Error("the ssh server that ran before lend no longer answers")
	}
	picture(30)
	if l := r.enc(t, img, filepath.Join(local, "c.sve")); !strings.HasPrefix(l, "ERR ") {
		t.Fatalf("a picture after lend stop: %q (want ERR)", l)
	}
}

func accountUID(t *testing.T, name string) uint32 {
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	var n uint32
	fmt.Sscan(string(out), &n)
	return n
}

func chownR(t *testing.T, path, name string) {
	if out, err := exec.Command("chown", "-R", name+":", path).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// relayProc is strata-vision-relay as Strata runs it, in a LAN host.
type relayProc struct {
	in     io.WriteCloser
	lines  chan string
	stderr *testenv.Buffer
}

func startRelayIn(t *testing.T, pc lanPC, bin, mm, model string) *relayProc {
	t.Helper()
	c := pc.cmd(bin, "--mmproj", mm, "--model", model)
	p := &relayProc{lines: make(chan string, 8), stderr: &testenv.Buffer{}}
	c.Stderr = p.stderr
	p.in, _ = c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		io.WriteString(p.in, "QUIT\n")
		p.in.Close()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			c.Process.Kill()
			<-done
		}
	})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.lines <- s.Text()
		}
		c.Wait()
		close(done)
	}()
	if l := testenv.Receive(t, p.lines, 30*time.Second, "READY"); l != "READY 48" {
		t.Fatalf("the relay's first line %q", l)
	}
	return p
}

func (p *relayProc) enc(t *testing.T, img, out string) string {
	t.Helper()
	fmt.Fprintf(p.in, "ENC %s %s\n", img, out)
	return testenv.Receive(t, p.lines, 90*time.Second, "the relay's answer\n"+p.stderr.String())
}

// lend --dry-run lists every step for Linux and changes nothing.
func TestLendDryRunChangesNothingIntegration(t *testing.T) {
	home := isolate(t)
	out, errOut, code := remoteCLI(t, "", "lend", "--dry-run", "--user", "gamer")
	if code != 0 || !strings.Contains(out, "systemctl enable --now ssh.service") || !strings.Contains(out, "left exactly as it is") ||
		!strings.Contains(out, "never the code") || !strings.Contains(out, "gamer") {
		t.Fatalf("lend --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	if m, _ := filepath.Glob(filepath.Join(home, "companion", "*")); len(m) != 0 {
		t.Errorf("the dry run wrote %v", m)
	}
	// Not lending: status says so, code and stop refuse in words.
	if out, _, code := remoteCLI(t, "", "lend", "status"); code != 0 || !strings.Contains(out, "not lending") {
		t.Errorf("lend status: exit %d %s", code, out)
	}
	if _, e, code := remoteCLI(t, "", "lend", "code"); code != 1 || !strings.Contains(e, "strata-service lend starts lending") {
		t.Errorf("lend code while not lending: exit %d %s", code, e)
	}
}

// Without root, lend says how to run it, and changes nothing.
func TestLendAsANormalAccountIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("adds an account")
	}
	u := testenv.NewUser(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	os.Chmod(home, 0o777)
	cmd := exec.Command("setpriv", "--reuid", u.Name, "--regid", u.Name, "--init-groups", self, "lend", "--agent-binary", self)
	cmd.Env = []string{envChildCLI + "=1", "HOME=" + u.Home, locations.EnvHome + "=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "sudo strata-service lend") {
		t.Fatalf("lend as %s: %v\n%s", u.Name, err, out)
	}
	if m, _ := filepath.Glob(filepath.Join(home, "*")); len(m) != 0 {
		t.Errorf("lend without rights wrote %v", m)
	}
}

// The Windows steps under wine: the dry run lists them (the firewall rule
// for the Private profile and the local subnet only), and a real run where
// Windows cannot add OpenSSH Server (wine has no PowerShell) says what to
// do and records nothing.
func TestLendOnWindowsUnderWineIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up a wine prefix")
	}
	w := newWine(t)
	svc := filepath.Join(w.dir, "strata-service.exe")
	buildWindows(t, svc, "..")
	out, ok := w.run(svc, "lend", "--dry-run")
	if !ok || !strings.Contains(out, "Add-WindowsCapability -Online -Name OpenSSH.Server~~~~0.0.1.0") || !strings.Contains(out, "sc.exe config sshd start= auto") ||
		!strings.Contains(out, "profile=private remoteip=localsubnet") || strings.Contains(strings.ToLower(out), "profile=public") || !strings.Contains(out, `%USERPROFILE%\strata-companion`) {
		t.Fatalf("lend --dry-run under wine:\n%s", out)
	}
	testenv.Copy(t, svc, w.drive("strata-vision-relay.exe"), 0o755) // any file: the refusal comes first
	out, ok = w.run(svc, "lend", "--agent-binary", `C:\strata-vision-relay.exe`)
	if ok || !strings.Contains(out, "Windows could not install OpenSSH Server") || !strings.Contains(out, "Optional features") {
		t.Fatalf("lend under wine without OpenSSH Server:\n%s", out)
	}
	if out, ok := w.run(svc, "lend", "status"); !ok || !strings.Contains(out, "not lending") {
		t.Errorf("lend status after the refused lend:\n%s", out)
	}
}
