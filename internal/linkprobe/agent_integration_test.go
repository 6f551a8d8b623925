//go:build linux

package linkprobe

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/remotecmd"
	"github.com/strata-companion/companion/internal/testenv"
)

// agentOnlyPC is a second PC behind a real sshd whose only key is
// agent-only, as `remote pair --agent-only` installs it: sshd runs the
// agent's gate whatever is asked. It returns the agent's path there.
func agentOnlyPC(t *testing.T, gpus []string) (*testenv.SSHD, string) {
	t.Helper()
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, gpus)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{smi}})
	pcDir := filepath.Join(t.TempDir(), "second pc") // a space: quoting is exercised
	if err := os.Mkdir(pcDir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Dir: pcDir, Name: "strata-vision-relay"})
	forced, err := remotecmd.Quote("linux", []string{agent, "gate"})
	if err != nil {
		t.Fatal(err)
	}
	line := `restrict,command="` + forced + `" ` + string(ssh.MarshalAuthorizedKey(s.ClientSigner.PublicKey()))
	if err := os.WriteFile(s.AuthorizedKeysFile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, agent
}

func TestProbeThroughAnAgentOnlyKeyIntegration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s, agent := agentOnlyPC(t, []string{"NVIDIA GeForce RTX 4070 Laptop GPU,8188", "NVIDIA RTX A2000 12GB,12282"})
	pcDir := filepath.Dir(agent)
	for _, f := range []string{"strata-vision", "mmproj-BF16.gguf"} {
		testenv.WriteExecutable(filepath.Join(pcDir, f), []byte("x"))
	}
	c := dial(t, s, s.Addr())

	// The key runs no shell command: what the shell probe would ask.
	p := &prober{c: c, opts: Options{StepTimeout: 20e9}, r: &Result{}}
	if out, status, err := p.exec(context.Background(), "uname -sm"); err != nil || !gateRefused(out, status) {
		t.Fatalf("uname through the agent-only key: %q status %d %v; want the gate's refusal", out, status, err)
	}

	r := Run(context.Background(), c, "pc2", Options{RemoteDir: pcDir, ModelFiles: []string{"mmproj-BF16.gguf", "vocab-stub.gguf"},
		Agent: agent, AgentOS: "linux", Pings: 5, TransferBytes: 2 << 20})
	t.Logf("%+v", r)
	if r.Via != ViaAgent || r.OS != "linux" || r.Arch != runtime.GOARCH || r.Shell != "posix" || !strings.HasPrefix(r.Uname, "Linux ") {
		t.Errorf("via %q, system %q/%q shell %q uname %q", r.Via, r.OS, r.Arch, r.Shell, r.Uname)
	}
	want := []struct {
		name  string
		total int
	}{{"NVIDIA GeForce RTX 4070 Laptop GPU", 8188}, {"NVIDIA RTX A2000 12GB", 12282}}
	if len(r.GPUs) != len(want) || r.NvidiaQuery != nvsmi.QueryRich {
		t.Fatalf("GPUs %+v (query %q), findings %+v", r.GPUs, r.NvidiaQuery, r.Findings)
	}
	for i, w := range want {
		if g := r.GPUs[i]; g.Index != i || g.Name != w.name || g.TotalMiB != w.total || g.FreeMiB <= 0 || g.FreeMiB >= w.total {
			t.Errorf("GPU %d: %+v, want %s with %d MiB", i, g, w.name, w.total)
		}
	}
	if !r.EncoderPresent || r.Encoder.Path != pcDir+"/strata-vision" || len(r.ModelFiles) != 2 ||
		!r.ModelFiles[0].Present || r.ModelFiles[1].Present || r.ModelFiles[1].Path != pcDir+"/vocab-stub.gguf" || r.FilesInPlace {
		t.Errorf("files: encoder %+v, models %+v, in place %v", r.Encoder, r.ModelFiles, r.FilesInPlace)
	}
	if !hasFinding(r, "remote prepare") {
		t.Errorf("no finding saying how to put the missing file there: %+v", r.Findings)
	}
	if len(r.RTTSamples) != 5 || r.RTT <= 0 || r.UpBytesPerSec <= 0 || r.DownBytesPerSec <= 0 {
		t.Errorf("link: rtt %v (%d samples), up %v, down %v: %+v", r.RTT, len(r.RTTSamples), r.UpBytesPerSec, r.DownBytesPerSec, r.Findings)
	}
	for _, f := range r.Findings {
		if f.Severity != probe.SeverityInfo {
			t.Errorf("unexpected finding: %+v", f)
		}
	}
	if !r.Estimate.Available {
		t.Errorf("estimate %+v", r.Estimate)
	}

	// The model files found there when none are named, and none of them
	// outside the folder.
	r = Run(context.Background(), c, "pc2", Options{RemoteDir: pcDir, Agent: agent, NoLink: true})
	if r.Via != ViaAgent || len(r.ModelFiles) != 1 || r.ModelFiles[0].Path != pcDir+"/mmproj-BF16.gguf" {
		t.Errorf("listed model files: %+v", r.ModelFiles)
	}

	// Without the agent's path the probe says what to do.
	r = Run(context.Background(), c, "pc2", Options{NoLink: true})
	if r.Via != ViaAgent || r.OS != "" || !hasFinding(r, "records the agent's folder") {
		t.Errorf("without the agent's path: via %q os %q, findings %+v", r.Via, r.OS, r.Findings)
	}
}

// A reply the probe cannot read (an agent that is not this build's, a cut
// line, a gate that does not know probe) gives a finding with what to do,
// never a panic or a made-up OS. The agent is played by a script, asked
// with UseAgent through a real sshd.
func TestGarbledAgentReplyIsAFindingIntegration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s := testenv.StartSSHD(t, testenv.SSHDOptions{})
	c := dial(t, s, s.Addr())
	dir := t.TempDir()
	agent := filepath.Join(dir, "strata-vision-relay")
	rich := strings.ReplaceAll(nvsmi.QueryArgs, `"`, ``)
	for _, c2 := range []struct {
		name, script, want string
	}{
		{"cut", `printf '{"version":"1","os":"linux","ar'`, "no readable answer"},
		{"not json", `echo 'hello there'`, "no readable answer"},
		{"no os", `echo '{"version":"1","arch":"amd64"}'`, "no readable answer"},
		{"a list", `echo '["linux","amd64"]'`, "no readable answer"},
		{"nothing", `true`, "no readable answer"},
		{"crashed", `echo 'panic: runtime error' >&2; exit 2`, "no readable answer"},
		{"old gate", `echo "` + framing.GateRefusal + `: only its agent, version and the stop of a hung agent are allowed" >&2; exit 126`, "older than this companion"},
		{"missing", `exit 127`, "not in"},
	} {
		testenv.WriteExecutable(agent, []byte("#!/bin/sh\n"+c2.script+"\n"))
		r := Run(context.Background(), c, "pc2", Options{Agent: agent, UseAgent: true, RemoteDir: dir})
		if r.Via != ViaAgent || r.OS != "" || len(r.GPUs) != 0 || r.UpBytesPerSec != 0 || !hasFinding(r, c2.want) || !hasFinding(r, "pair the second PC again") {
			t.Errorf("%s: via %q os %q gpus %v, findings %+v", c2.name, r.Via, r.OS, r.GPUs, r.Findings)
		}
	}
	// Good JSON whose nvidia-smi output is garbage: the local parser's
	// finding, the rest still read.
	testenv.WriteExecutable(agent, []byte(`#!/bin/sh
echo '{"version":"1","os":"linux","arch":"amd64","uname":"Linux x86_64","dir":"`+dir+`","nvidia_smi_found":true,"nvidia":[{"args":"`+rich+`","output":"Segmentation fault","status":0}],"files":[],"gguf":[]}'
`))
	r := Run(context.Background(), c, "pc2", Options{Agent: agent, UseAgent: true, NoLink: true})
	if r.OS != "linux" || r.Arch != "amd64" || len(r.GPUs) != 0 || !hasFinding(r, "printed something this probe cannot read") {
		t.Errorf("garbage from nvidia-smi: os %q gpus %v, findings %+v", r.OS, r.GPUs, r.Findings)
	}
}
