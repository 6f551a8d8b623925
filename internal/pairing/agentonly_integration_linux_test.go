//go:build linux

package pairing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/testenv"
)

// buildGo writes the program pkg (built once, testenv.Program) as out.
func buildGo(t *testing.T, out, pkg string) string {
	t.Helper()
	return testenv.Program(t, pkg, testenv.BuildOptions{Dir: filepath.Dir(out), Name: filepath.Base(out)})
}

func sumOf(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// M1 and the check, against a real sshd: paired agent-only, the
// companion's key runs nothing but the agent (`id`, a shell, the agent with
// a program of the caller's choosing are refused); prepare works through it
// (data files, and the encoder as the checksummed install pinned at
// pairing); pictures are read through it; the hung-agent stop still works
// (and stops nothing else); an upload cannot replace the encoder outside
// prepare.
func TestAgentOnlyKeyRunsOnlyTheAgentIntegration(t *testing.T) {
	e := newEnv(t, testenv.SSHDOptions{})
	bins := t.TempDir()
	agentBin := buildGo(t, filepath.Join(bins, "strata-vision-relay"), "github.com/strata-companion/companion/relay")
	encDir := t.TempDir() // this PC's strata-vision, alone in its folder
	standin := buildGo(t, filepath.Join(encDir, "strata-vision"), "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin")
	pcDir := filepath.Join(t.TempDir(), "second pc") // a space: quoting is exercised

	keysBefore, _ := os.ReadFile(e.s.AuthorizedKeysFile)
	o := e.pairOptions()
	o.ShellKey, o.RemoteDir, o.From = false, pcDir, "127.0.0.1" // agent-only: the default
	o.LocalEncoder = standin                                    // this PC's build: pinned, as the OS and arch match
	o.AgentBinary = func(goos, goarch string) (string, error) { return agentBin, nil }
	pinned := sumOf(t, standin)
	ctx := context.Background()
	res, err := Pair(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	line := res.Line
	for _, want := range []string{"restrict,", `command="`, ` gate --allow ` + pinned + " --keys " + e.s.AuthorizedKeysFile, `from="127.0.0.1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("authorized_keys line %q lacks %q", line, want)
		}
	}
	if res.Remote.RemoteDir != pcDir {
		t.Errorf("recorded folder %q, want %q", res.Remote.RemoteDir, pcDir)
	}

	// The companion's key, as the relay holds it.
	signer, err := sshx.LoadSigner(e.keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	hostKey := e.s.HostSigner.PublicKey()
	c, err := sshx.Dial(ctx, sshx.Config{Endpoint: e.ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), HostKeyAlgorithms: sshx.HostKeyAlgorithms(hostKey), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	agentPath := filepath.Join(pcDir, "strata-vision-relay")
	q := func(argv ...string) string {
		s, err := remotecmd.Quote("linux", argv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	runCmd := func(cmd string) (string, error) {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		out, err := sess.CombinedOutput(cmd)
		return string(out), err
	}
	marker := filepath.Join(t.TempDir(), "ran")
	for _, cmd := range []string{"id", "id > " + marker, "sh -c 'id > " + marker + "'", "touch " + marker,
		q(agentPath, "agent", "--encoder", "/usr/bin/touch", "--mmproj", marker, "--model", "x"),
		q(agentPath, "agent", "--install-sha256", strings.Repeat("ab", 32)),
		q(agentPath, "authorized-keys", "add", "--comment", "x", "--line", "-"),
		// The link probe's subcommands, only within their bounds.
		q(agentPath, "source", "1073741825"), q(agentPath, "source", "lots"),
		q(agentPath, "probe", "--file", "../../etc/passwd"), q(agentPath, "probe", "--file", "/etc/passwd"),
		q(agentPath, "probe", "--encoder", "/usr/bin/touch")} {
		out, err := runCmd(cmd)
		var ee *ssh.ExitError
		if strings.Contains(out, "uid=") || !errors.As(err, &ee) || ee.ExitStatus() != 126 || !strings.Contains(out, "only runs the Strata Companion agent") {
			t.Errorf("%q through the companion's key: exit %v, output %q; want refused (126)", cmd, err, out)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command of the caller's choosing ran on the second PC")
	}
	if out, err := runCmd(q(agentPath, "version")); err != nil || !strings.Contains(out, "strata-vision-relay") {
		t.Errorf("the agent's version: %v %q", err, out)
	}
	if out, err := runCmd(q(agentPath, "probe")); err != nil || !strings.Contains(out, `"os":"linux"`) {
		t.Errorf("the agent's probe: %v %q", err, out)
	}

	// Prepare through the agent-only key: the mmproj, the vocabulary stub,
	// and the encoder (its sum pinned at pairing).
	mm, model := filepath.Join(bins, "mmproj.gguf"), filepath.Join(bins, "m-00001-of-00002.gguf")
	fakeencoder.WriteMmproj(mm, 32)
	fakeencoder.WriteModel(model, 10)
	paired := res.Remote
	paired.KeyFile = e.keyFile
	pres, err := prepare.Prepare(ctx, prepare.Options{Remote: paired, Mmproj: mm, Model: model,
		AgentBinary: o.AgentBinary, LocalEncoder: standin, LocalOS: "linux", LocalArch: runtime.GOARCH, MaxTokens: 4})
	if err != nil {
		t.Fatalf("prepare through the agent-only key: %v", err)
	}
	encoder := filepath.Join(pcDir, "strata-vision")
	if sumOf(t, encoder) != pinned || pres.NEmbd != 32 {
		t.Fatalf("after prepare: encoder sum %s, n_embd %d", sumOf(t, encoder), pres.NEmbd)
	}

	// Strata's update brings another strata-vision build, not pinned at
	// pairing: prepare keeps the encoder the second PC has (pictures go on
	// as before) and says that pairing again installs the new one; with no
	// encoder there it fails, saying so.
	updDir := t.TempDir()
	updated := filepath.Join(updDir, "strata-vision")
	b, _ := os.ReadFile(standin)
	if err := testenv.WriteExecutable(updated, append(b, []byte("\n# another build\n")...)); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	if _, err := prepare.Prepare(ctx, prepare.Options{Remote: paired, Mmproj: mm, Model: model, Progress: &said,
		AgentBinary: o.AgentBinary, LocalEncoder: updated, LocalOS: "linux", LocalArch: runtime.GOARCH, MaxTokens: 4}); err != nil {
		t.Fatalf("prepare after an update of this PC's strata-vision: %v", err)
	}
	if sumOf(t, encoder) != pinned || !strings.Contains(said.String(), "keeps the one it has") {
		t.Errorf("after an unpinned build: encoder sum %s (want the pinned %s); prepare said:\n%s", sumOf(t, encoder), pinned, said.String())
	}
	os.Rename(encoder, encoder+".away")
	_, err = prepare.Prepare(ctx, prepare.Options{Remote: paired, Mmproj: mm, Model: model,
		AgentBinary: o.AgentBinary, LocalEncoder: updated, LocalOS: "linux", LocalArch: runtime.GOARCH, MaxTokens: 4})
	if err == nil || !strings.Contains(err.Error(), "was not allowed when it was paired") {
		t.Errorf("prepare with an unpinned build and no encoder there: %v", err)
	}
	if _, err := os.Stat(encoder); err == nil {
		t.Error("an unpinned build was installed")
	}
	os.Rename(encoder+".away", encoder)

	// Another agent build cannot be installed through the key: prepare says
	// to pair again, and the agent there is unchanged.
	other := testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Name: "strata-vision-relay",
		Flags: []string{"-ldflags=-X github.com/strata-companion/companion/internal/version.Version=other"}})
	before := sumOf(t, agentPath)
	_, err = prepare.Prepare(ctx, prepare.Options{Remote: paired, Mmproj: mm, Model: model,
		AgentBinary: func(string, string) (string, error) { return other, nil }, LocalOS: "linux", LocalArch: runtime.GOARCH})
	if err == nil || !strings.Contains(err.Error(), "pair the second PC again") {
		t.Errorf("prepare with another agent build through the agent-only key: %v", err)
	}
	if sumOf(t, agentPath) != before {
		t.Error("the agent was replaced through the agent-only key")
	}

	// An upload cannot replace the encoder outside prepare's checksummed install.
	evil := []byte("#!/bin/sh\nid > " + marker + "\n")
	es := sha256.Sum256(evil)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	in, _ := sess.StdinPipe()
	outp, _ := sess.StdoutPipe()
	if err := sess.Start(q(agentPath, "agent")); err != nil {
		t.Fatal(err)
	}
	fw, fr := framing.NewWriter(in), framing.NewReader(outp)
	if typ, _, err := fr.Next(); err != nil || typ != framing.Hello {
		t.Fatalf("hello: %q %v", typ, err)
	}
	fw.WriteJSON(framing.PutBegin, framing.PutHeader{Name: "strata-vision", Size: int64(len(evil)), SHA256: hex.EncodeToString(es[:]), Mode: 0o755})
	fw.Write(framing.PutData, evil)
	fw.Write(framing.PutEnd)
	if typ, p, err := fr.Next(); err != nil || typ != framing.Error || !strings.Contains(string(p), "checksummed install") {
		t.Errorf("replacing the encoder: %q %q %v; want refused", typ, p, err)
	}
	in.Close()
	sess.Wait()
	if sumOf(t, encoder) != pinned {
		t.Fatal("the encoder was replaced")
	}

	// Pictures through the key, as the relay reads them.
	rm, rmodel := remote.RemoteFiles(mm, model)
	args := remote.AgentArgs{OS: "linux", RemoteDir: pcDir, Encoder: "strata-vision", Mmproj: rm, Model: rmodel, MaxTokens: 4}
	agentCmd, err := args.Command()
	if err != nil {
		t.Fatal(err)
	}
	rl := relay.New(relay.Options{Host: paired.Host, Dial: remote.SSHDialer(paired), AgentCommand: agentCmd, NEmbd: 32})
	img := filepath.Join(t.TempDir(), "p.img")
	os.WriteFile(img, append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("px"), 100)...), 0o600)
	if reply := rl.Encode(ctx, img, img+".sve"); !strings.HasPrefix(reply, "OK ") {
		t.Errorf("a picture through the agent-only key: %q", reply)
	}
	rl.Close()

	// An encoder outside the agent's folder (a Strata engine installed on
	// that PC) runs only when pinned at pairing (--encoder ABSPATH).
	absArgs := args
	absArgs.Encoder = standin // encDir: not the agent's folder
	absCmd, err := absArgs.Command()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd(absCmd); err == nil || !strings.Contains(out, "outside the agent's folder") {
		t.Errorf("an unpinned encoder outside the folder: %v %q; want refused", err, out)
	}
	// prepare pointed at it says exactly what to run.
	_, err = prepare.Prepare(ctx, prepare.Options{Remote: paired, Mmproj: mm, Model: model, EncoderPath: standin,
		AgentBinary: o.AgentBinary, LocalOS: "linux", LocalArch: runtime.GOARCH, MaxTokens: 4})
	if err == nil || !strings.Contains(err.Error(), "strata-service remote pair --encoder "+standin+" "+e.ep.String()) {
		t.Errorf("prepare with an unpinned absolute encoder: %v; want the command to run", err)
	}
	o2 := o
	o2.Encoder = standin
	if res2, err := Pair(ctx, o2); err != nil || !strings.Contains(res2.Line, " --encoder "+standin+" ") {
		t.Fatalf("pairing again with the encoder pinned: %v %+v", err, res2)
	}
	rl = relay.New(relay.Options{Host: paired.Host, Dial: remote.SSHDialer(paired), AgentCommand: absCmd, NEmbd: 32})
	if reply := rl.Encode(ctx, img, img+".sve"); !strings.HasPrefix(reply, "OK ") {
		t.Errorf("a picture with the pinned encoder %s: %q", standin, reply)
	}
	rl.Close()

	// The hung-agent stop: an agent that cannot read its input's end (here
	// stopped) is ended with the relay's `kill -KILL PID`, which the gate
	// does itself; a PID that is not this agent is refused.
	sess, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	in, _ = sess.StdinPipe()
	outp, _ = sess.StdoutPipe()
	if err := sess.Start(agentCmd); err != nil {
		t.Fatal(err)
	}
	_, p, err := framing.NewReader(outp).Next()
	var info framing.Info
	if err != nil || json.Unmarshal(p, &info) != nil || info.PID <= 0 {
		t.Fatalf("hello: %s %v", p, err)
	}
	syscall.Kill(info.PID, syscall.SIGSTOP) // hung
	bystander := exec.Command("sleep", "60")
	bystander.Start()
	defer bystander.Process.Kill()
	if out, err := runCmd("kill -KILL " + strconv.Itoa(bystander.Process.Pid)); err == nil || !strings.Contains(out, "not this agent") {
		t.Errorf("kill of another process: %v %q; want refused", err, out)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the bystander was killed: %v", err)
	}
	if out, err := runCmd("kill -KILL " + strconv.Itoa(info.PID)); err != nil {
		t.Errorf("the hung-agent stop: %v %q", err, out)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case <-waited:
	case <-time.After(15 * time.Second):
		t.Fatal("the hung agent's session did not end after its stop")
	}
	in.Close()
	if err := syscall.Kill(info.PID, 0); err == nil {
		t.Errorf("the hung agent %d still runs", info.PID)
		syscall.Kill(info.PID, syscall.SIGKILL)
	}

	c.Close()

	// Unpair with the companion's key alone (no login of the user's): the
	// gate removes its own line; every other line is as it was, byte for byte.
	if _, err := Unpair(ctx, UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known,
		AuthorizedKeysFile: e.s.AuthorizedKeysFile, Comment: o.Comment, Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("unpair through the agent-only key: %v", err)
	}
	if ak, _ := os.ReadFile(e.s.AuthorizedKeysFile); !bytes.Equal(ak, keysBefore) {
		t.Errorf("authorized_keys after unpair:\n%q\nwant\n%q", ak, keysBefore)
	}
}

// Pairing with no option at all pins the key to the agent: the line forces
// the gate with the keys file, and `ssh -i KEY host id` (OpenSSH's own
// client) runs nothing but the agent: exit 126, nothing ran. A shell key
// (ShellKey, the CLI's --shell-key) still gets the old `restrict` line.
func TestDefaultPairingIsAgentOnlyIntegration(t *testing.T) {
	e := newEnv(t, testenv.SSHDOptions{})
	agentBin := buildGo(t, filepath.Join(t.TempDir(), "strata-vision-relay"), "github.com/strata-companion/companion/relay")
	pcDir := t.TempDir()
	o := Options{Endpoint: e.ep, Auth: []ssh.AuthMethod{ssh.PublicKeys(e.s.ClientSigner)},
		KnownHosts: &sshx.KnownHosts{File: e.known, Accept: ssh.FingerprintSHA256(e.s.HostSigner.PublicKey())},
		KeyFile:    e.keyFile, Recorder: fileRecorder(e.settings), AuthorizedKeysFile: e.s.AuthorizedKeysFile,
		Comment: "strata-companion@testpc", Timeout: 10 * time.Second, RemoteDir: pcDir,
		AgentBinary: func(string, string) (string, error) { return agentBin, nil }}
	if _, err := Pair(context.Background(), Options{Endpoint: o.Endpoint, Auth: o.Auth, KnownHosts: o.KnownHosts, KeyFile: o.KeyFile,
		Recorder: o.Recorder, AuthorizedKeysFile: o.AuthorizedKeysFile}); err == nil || !strings.Contains(err.Error(), "agent build") {
		t.Fatalf("default pairing without an agent build: %v; want refused", err)
	}
	res, err := Pair(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ak, _ := os.ReadFile(e.s.AuthorizedKeysFile)
	want := `restrict,command="` + filepath.Join(pcDir, "strata-vision-relay") + ` gate --keys ` + e.s.AuthorizedKeysFile + `" ssh-ed25519 `
	if !strings.Contains(string(ak), want) || res.Line != want+strings.TrimPrefix(res.Line, want) || countLines(t, e.s.AuthorizedKeysFile, "strata-companion@testpc") != 1 {
		t.Fatalf("authorized_keys after default pairing:\n%s\nwant a line starting %q", ak, want)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("ssh", "-i", e.keyFile, "-p", strconv.Itoa(e.ep.Port), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+e.known, "-o", "GlobalKnownHostsFile=/dev/null", "-F", "/dev/null",
		e.ep.User+"@"+e.ep.Host, "id; touch "+marker)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 126 || strings.Contains(string(out), "uid=") || !strings.Contains(string(out), "only runs the Strata Companion agent") {
		t.Errorf("ssh -i KEY host id: %v %q; want exit 126 from the gate", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command ran through the default key")
	}

	// --shell-key: the old line.
	o.ShellKey = true
	if res, err = Pair(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Line, "restrict ssh-ed25519 ") || countLines(t, e.s.AuthorizedKeysFile, "strata-companion@testpc") != 1 {
		t.Errorf("the shell key's line: %q", res.Line)
	}
	if _, err := Unpair(context.Background(), UnpairOptions{Remote: e.paired(), Recorder: fileRecorder(e.settings), KnownHosts: e.known,
		AuthorizedKeysFile: e.s.AuthorizedKeysFile, Comment: o.Comment, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if countLines(t, e.s.AuthorizedKeysFile, "strata-companion@testpc") != 0 {
		t.Error("the shell key's line outlived unpair")
	}
}
