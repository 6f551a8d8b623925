//go:build linux

package relay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
)

func TestPrepareAnEmptySecondPCThenResumeAndSkipIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	relayBin, standin := binaries(t)
	empty := filepath.Join(t.TempDir(), "remote dir") // nothing there yet; a space to test quoting
	pc.remote.RemoteDir = empty
	pc.remote.EncoderPath = ""
	var log syncBuffer
	opts := prepare.Options{
		Remote: pc.remote, Mmproj: pc.mmproj, Model: pc.model,
		AgentBinary: func(goos, goarch string) (string, error) {
			if goos != runtime.GOOS || goarch != runtime.GOARCH {
				t.Fatalf("asked for a %s/%s agent on a %s/%s test machine", goos, goarch, runtime.GOOS, runtime.GOARCH)
			}
			return relayBin, nil
		},
		LocalEncoder: standin, LocalOS: runtime.GOOS, LocalArch: runtime.GOARCH,
		MaxTokens: 4, Progress: &log,
	}
	res, err := prepare.Prepare(context.Background(), opts)
	if err != nil {
		t.Fatalf("prepare: %v\n%s", err, log.String())
	}
	if res.NEmbd != pc.nEmbd || res.RemoteDir != empty || res.EncoderPath != "strata-vision" || res.OS != "linux" {
		t.Fatalf("result %+v\n%s", res, log.String())
	}
	rm, rmodel := remote.RemoteFiles(pc.mmproj, pc.model)
	for _, n := range []string{remote.AgentName("linux"), rm, rmodel, "strata-vision"} {
		if _, err := os.Stat(filepath.Join(empty, n)); err != nil {
			t.Fatalf("%s not on the second PC: %v\n%s", n, err, log.String())
		}
	}
	var stub bytes.Buffer
	gguf.WriteVocabStub(pc.model, &stub)
	if b, _ := os.ReadFile(filepath.Join(empty, rmodel)); !bytes.Equal(b, stub.Bytes()) {
		t.Fatal("the vocabulary stub on the second PC differs from the one built here")
	}
	if !strings.Contains(log.String(), "installing the agent") || !strings.Contains(log.String(), "READY 16") {
		t.Fatalf("progress:\n%s", log.String())
	}

	// A broken upload of a new mmproj is resumed where it stopped.
	big := make([]byte, 3<<20)
	copy(big, mustRead(t, pc.mmproj))
	for i := 4096; i < len(big); i++ {
		big[i] = byte(i)
	}
	os.WriteFile(pc.mmproj, big, 0o644) // still a valid GGUF: the tail is ignored
	os.WriteFile(filepath.Join(empty, rm+".part"), big[:2<<20], 0o600)
	log = syncBuffer{}
	if _, err := prepare.Prepare(context.Background(), opts); err != nil {
		t.Fatalf("second prepare: %v\n%s", err, log.String())
	}
	out := log.String()
	if !strings.Contains(out, "resuming "+rm+" at 2.0 MiB") || !strings.Contains(out, "the agent is up to date") ||
		!strings.Contains(out, rmodel+" is already on the second PC") {
		t.Fatalf("second run:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(empty, rm)); !bytes.Equal(b, big) {
		t.Fatal("the resumed mmproj differs")
	}
	waitGone(t, "the agent or encoder after prepare", filepath.Join(empty, remote.AgentName("linux")), filepath.Join(empty, "strata-vision"))
}

func TestPrepareSaysWhatIsMissingIntegration(t *testing.T) {
	t.Parallel() // the 500-picture test, which counts goroutines and fds, runs alone before these
	pc := newSecondPC(t, "")
	relayBin, _ := binaries(t)
	pc.remote.RemoteDir = t.TempDir()
	var log syncBuffer
	_, err := prepare.Prepare(context.Background(), prepare.Options{
		Remote: pc.remote, Mmproj: pc.mmproj, Model: pc.model,
		AgentBinary: func(string, string) (string, error) { return relayBin, nil },
		EncoderPath: "/opt/nowhere/strata-vision", Progress: &log,
	})
	if err == nil || !strings.Contains(err.Error(), "no strata-vision at /opt/nowhere/strata-vision") {
		t.Fatalf("err = %v\n%s", err, log.String())
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
