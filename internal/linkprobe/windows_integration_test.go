//go:build linux

package linkprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The probe's Windows branch against the Windows test PC (cmd.exe under
// wine behind a real sshd, sftp with /C:/ paths): OS and arch from ver and
// %PROCESSOR_ARCHITECTURE%, the GPU from a stand-in nvidia-smi.exe in
// System32, files by cmd.exe's `if exist` and `dir /b`, the link through sftp.
// No PowerShell is involved (wine has none).
func TestProbeAgainstAWindowsPCIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	pc := testenv.StartWindowsPC(t, testenv.WindowsPCOptions{})
	pc.InstallNvidiaSMI(t)
	c := pc.Dial(t)
	remote := pc.Path(`Strata Vision`)
	os.MkdirAll(remote, 0o755)
	t.Cleanup(func() { os.RemoveAll(remote) })
	for _, f := range []string{"strata-vision.exe", "mmproj-BF16.gguf", "vocab-stub.gguf"} {
		os.WriteFile(filepath.Join(remote, f), []byte("x"), 0o755)
	}
	r := Run(context.Background(), c, "pc2", Options{RemoteDir: `Strata Vision`, Pings: 5, TransferBytes: 2 << 20})
	t.Logf("%+v", r)
	checkReport(t, r, "windows", "windows")
	if r.Arch != "amd64" {
		t.Errorf("arch %q, want amd64", r.Arch)
	}
	ents, _ := os.ReadDir(pc.ProfileDir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("the probe left %s behind", e.Name())
		}
	}

	// A missing encoder and a folder that does not exist.
	os.Remove(filepath.Join(remote, "strata-vision.exe"))
	r = Run(context.Background(), c, "pc2", Options{RemoteDir: `Strata Vision`, NoLink: true})
	if r.EncoderPresent || r.FilesInPlace || len(r.ModelFiles) != 2 {
		t.Errorf("without the encoder: %+v %+v", r.Encoder, r.ModelFiles)
	}
	r = Run(context.Background(), c, "pc2", Options{RemoteDir: `C:\nowhere`, NoLink: true})
	if r.EncoderPresent || len(r.ModelFiles) != 0 {
		t.Errorf("a missing folder: %+v %+v", r.Encoder, r.ModelFiles)
	}

	// Through the agent (what an agent-only key leaves): the Windows build
	// in the folder, asked through cmd.exe; its OS version, the stand-in
	// GPU through nvidia-smi.exe in System32, the files, the link through
	// its sink and source (no sftp).
	os.WriteFile(filepath.Join(remote, "strata-vision.exe"), []byte("x"), 0o755)
	if err := testenv.CopyFile(pc.Wine.Build(t, "github.com/strata-companion/companion/relay"), filepath.Join(remote, "strata-vision-relay.exe"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = Run(context.Background(), c, "pc2", Options{RemoteDir: `Strata Vision`, Agent: pc.Profile + `\Strata Vision\strata-vision-relay.exe`,
		AgentOS: "windows", UseAgent: true, Pings: 5, TransferBytes: 2 << 20, StepTimeout: 60 * time.Second})
	t.Logf("through the agent: %+v", r)
	checkReport(t, r, "windows", "windows")
	if r.Via != ViaAgent || r.Arch != "amd64" || !strings.Contains(r.Uname, "Windows") {
		t.Errorf("via %q arch %q uname %q", r.Via, r.Arch, r.Uname)
	}
}
