//go:build linux

package linkprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/testenv"
)

// fakeNvidiaSMI writes an nvidia-smi that answers the rich query as a
// driver with one RTX 3060 Laptop GPU would (docs/strata.md's second PC), and
// rejects anything else as a real one does.
func fakeNvidiaSMI(t *testing.T) string {
	dir := t.TempDir()
	script := `#!/bin/sh
case "$*" in
  *--query-gpu=*) echo "0, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 412, 5606, 581.57, 8.6, Disabled" ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
`
	if err := testenv.WriteExecutable(filepath.Join(dir, "nvidia-smi"), []byte(script)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func dial(t testing.TB, s *testenv.SSHD, addr string) *ssh.Client {
	t.Helper()
	ep, err := sshx.ParseEndpoint(s.User + "@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sshx.Dial(context.Background(), sshx.Config{Endpoint: ep,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(s.HostSigner.PublicKey()), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProbeAgainstARealSSHDIntegration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeNvidiaSMI(t)}})
	c := dial(t, s, s.Addr())

	remote := filepath.Join(t.TempDir(), "Strata Vision") // a space, as on Windows
	os.MkdirAll(remote, 0o755)
	for _, f := range []string{"strata-vision", "mmproj-BF16.gguf", "vocab-stub.gguf"} {
		testenv.WriteExecutable(filepath.Join(remote, f), []byte("x"))
	}
	r := Run(context.Background(), c, "pc2", Options{RemoteDir: remote, Pings: 5, TransferBytes: 2 << 20})
	t.Logf("%+v", r)
	checkReport(t, r, "linux", "posix")
	if r.Via != ViaShell {
		t.Errorf("via %q, want the shell", r.Via)
	}
	if !r.Estimate.Available || r.Estimate.PictureSeconds <= 0 || r.Estimate.Device == nil || *r.Estimate.Device != 0 {
		t.Errorf("estimate %+v", r.Estimate)
	}
	for _, f := range r.Findings {
		if f.Severity != probe.SeverityInfo {
			t.Errorf("unexpected finding: %+v", f)
		}
	}

	// Nothing there yet, and a named model file missing.
	r = Run(context.Background(), c, "pc2", Options{RemoteDir: filepath.Join(remote, "missing"), ModelFiles: []string{"mmproj-BF16.gguf"}, NoLink: true})
	if r.EncoderPresent || r.FilesInPlace || len(r.ModelFiles) != 1 || r.ModelFiles[0].Present {
		t.Errorf("missing folder: encoder %+v, models %+v", r.Encoder, r.ModelFiles)
	}
	if !hasFinding(r, "remote prepare") {
		t.Errorf("no finding telling how to fix missing files: %+v", r.Findings)
	}
	if r.RTT != 0 || r.UpBytesPerSec != 0 || !strings.Contains(r.Estimate.Basis, "not measured") {
		t.Errorf("NoLink: rtt %v, up %v, basis %q", r.RTT, r.UpBytesPerSec, r.Estimate.Basis)
	}
}

func TestProbeWithoutNvidiaSMIIntegration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	if _, err := os.Stat("/usr/bin/nvidia-smi"); err == nil {
		t.Skip("this machine has a real nvidia-smi")
	}
	s := testenv.StartSSHD(t, testenv.SSHDOptions{})
	c := dial(t, s, s.Addr())
	r := Run(context.Background(), c, "pc2", Options{TransferBytes: 1 << 20})
	if len(r.GPUs) != 0 || !hasFinding(r, "nvidia-smi") {
		t.Errorf("GPUs %+v, findings %+v", r.GPUs, r.Findings)
	}
	if r.Estimate.Available || !strings.Contains(r.Estimate.Basis, "no NVIDIA GPU") {
		t.Errorf("estimate without a GPU: %+v", r.Estimate)
	}
	// The link is still measured: it says whether the PC is worth fixing.
	if r.RTT <= 0 || r.UpBytesPerSec <= 0 || r.DownBytesPerSec <= 0 {
		t.Errorf("link not measured: rtt %v up %v down %v", r.RTT, r.UpBytesPerSec, r.DownBytesPerSec)
	}
}

func hasFinding(r *Result, word string) bool {
	for _, f := range r.Findings {
		if strings.Contains(f.What+" "+f.Fix, word) {
			return true
		}
	}
	return false
}

// checkReport checks what a probe of the test second PC (one RTX 3060
// Laptop GPU with 5606 MiB free, the encoder and two model files in the
// remote folder, 5 pings, a transfer) reports on any OS.
func checkReport(t *testing.T, r *Result, goos, shell string) {
	t.Helper()
	if r.OS != goos || r.Arch == "" || r.Shell != shell {
		t.Errorf("system: os %q arch %q shell %q (uname %q), want %s and %s", r.OS, r.Arch, r.Shell, r.Uname, goos, shell)
	}
	if len(r.GPUs) != 1 || r.GPUs[0].Name != "NVIDIA GeForce RTX 3060 Laptop GPU" || r.GPUs[0].FreeMiB != 5606 || r.NvidiaQuery != nvsmi.QueryRich {
		t.Errorf("GPUs %+v (query %q)", r.GPUs, r.NvidiaQuery)
	}
	if !r.EncoderPresent || !r.FilesInPlace || len(r.ModelFiles) != 2 {
		t.Errorf("files: encoder %+v, models %+v, in place %v", r.Encoder, r.ModelFiles, r.FilesInPlace)
	}
	if len(r.RTTSamples) != 5 || r.RTT <= 0 {
		t.Errorf("RTT %v from %v", r.RTT, r.RTTSamples)
	}
	if r.UpBytesPerSec <= 0 || r.DownBytesPerSec <= 0 {
		t.Errorf("throughput up %v down %v: %+v", r.UpBytesPerSec, r.DownBytesPerSec, r.Findings)
	}
}
