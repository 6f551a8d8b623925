//go:build linux

package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/testenv"
)

// `strata-service probe --ssh` against the Windows test PC (cmd.exe under
// wine behind a real sshd): the CLI's Windows branch end to end, OS and
// arch from ver, the GPU from the stand-in nvidia-smi.exe in System32, the
// link through sftp.
func TestProbeSSHCLIAgainstAWindowsPC(t *testing.T) {
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
