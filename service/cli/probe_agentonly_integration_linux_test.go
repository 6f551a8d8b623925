//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/testenv"
)

// Paired agent-only, `probe --ssh` with no credentials of the user's (only
// the companion's key, which runs nothing but the agent) still reports the
// second PC: through the agent, and says so.
func TestProbeSSHThroughAnAgentOnlyKeyIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	isolate(t)
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, []string{"NVIDIA GeForce RTX 4060 Laptop GPU,8188"})
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{smi}})
	target := s.User + "@" + s.Addr()
	fp := ssh.FingerprintSHA256(s.HostSigner.PublicKey())
	agent := testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Name: "strata-vision-relay"})
	pcDir := filepath.Join(t.TempDir(), "second pc")

	out, errOut, code := remoteCLI(t, "", "remote", "pair", target, "--identity", s.ClientKeyFile, "--accept-host-key", fp,
		"--authorized-keys", s.AuthorizedKeysFile, "--agent-only", "--agent-binary", agent, "--remote-dir", pcDir)
	if code != 0 || !strings.Contains(out, "agent-only") {
		t.Fatalf("pair --agent-only: exit %d\n%s\n%s", code, out, errOut)
	}
	testenv.WriteExecutable(filepath.Join(pcDir, "strata-vision"), []byte("x"))

	out, errOut, code = remoteCLI(t, "", "probe", "--ssh", target, "--transfer-mb", "1")
	t.Logf("probe --ssh:\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"through the Strata Companion agent", "linux/", "NVIDIA GeForce RTX 4060 Laptop GPU: 8188 MiB (8.0 GiB) total",
		"present  " + pcDir + "/strata-vision", "round trip"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	out, _, code = remoteCLI(t, "", "probe", "--ssh", target, "--json", "--transfer-mb", "1")
	var j sshProbeOutput
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || j.Remote == nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if r := j.Remote; r.Via != linkprobe.ViaAgent || r.OS != "linux" || len(r.GPUs) != 1 || r.GPUs[0].TotalMiB != 8188 ||
		!r.EncoderPresent || r.UpBytesPerSec <= 0 || r.DownBytesPerSec <= 0 {
		t.Errorf("json report: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(pcDir, "strata-vision-relay")); err != nil {
		t.Errorf("the agent is not where pairing put it: %v", err)
	}
}
