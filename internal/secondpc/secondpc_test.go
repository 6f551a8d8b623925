package secondpc

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// writeConfig makes ROOT/strata-test.json with the given vision block.
func writeConfig(t *testing.T, body string) (*strataconfig.Config, string) {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "strata-test.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := strataconfig.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, root
}

// Strata resolves relative vision paths against the config's cwd (itself
// relative to the install), not against the working folder of whoever reads
// the config; gpu follows the config (false stays false) unless chosen.
func TestPrepareOptionsFollowTheConfig(t *testing.T) {
	t.Chdir(t.TempDir()) // a working folder that is not the install
	for _, tc := range []struct {
		name, cfg     string
		gpu           *bool
		wantMmproj    string // relative to the root
		wantGPU       bool
		wantMaxTokens int
	}{
		{"cwd dot", `{"cwd": ".", "vision": {"mmproj": "models/mm.gguf", "model": "models/m.gguf", "gpu": false, "max_tokens": 300}}`, nil, "models/mm.gguf", false, 300},
		{"cwd sub", `{"cwd": "engine", "vision": {"mmproj": "mm.gguf", "model": "m.gguf", "gpu": true}}`, nil, "engine/mm.gguf", true, 0},
		{"no cwd", `{"vision": {"mmproj": "mm.gguf", "model": "m.gguf"}}`, nil, "mm.gguf", false, 0},
		{"absolute", `{"cwd": "x", "vision": {"mmproj": "/abs/mm.gguf", "model": "m.gguf"}}`, nil, "", false, 0},
		{"gpu chosen", `{"vision": {"mmproj": "mm.gguf", "model": "m.gguf", "gpu": false}}`, ptr(true), "mm.gguf", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, root := writeConfig(t, tc.cfg)
			o, err := PrepareOptions(cfg, settings.Remote{Host: "pc2"}, PrepareChoices{GPU: tc.gpu})
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(root, filepath.FromSlash(tc.wantMmproj))
			if tc.wantMmproj == "" {
				want = "/abs/mm.gguf"
			}
			if o.Mmproj != want {
				t.Errorf("mmproj %s, want %s", o.Mmproj, want)
			}
			if o.GPU != tc.wantGPU || o.MaxTokens != tc.wantMaxTokens || o.Remote.Host != "pc2" {
				t.Errorf("gpu %v max_tokens %d remote %+v", o.GPU, o.MaxTokens, o.Remote)
			}
		})
	}
	cfg, _ := writeConfig(t, `{"args": []}`)
	if _, err := PrepareOptions(cfg, settings.Remote{}, PrepareChoices{}); err == nil {
		t.Error("no vision block and no files named: no error")
	}
	if o, err := PrepareOptions(cfg, settings.Remote{}, PrepareChoices{Mmproj: "/a/mm", Model: "/a/m"}); err != nil || o.Mmproj != "/a/mm" {
		t.Errorf("named files: %+v %v", o, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPrepareNamesAMissingFileBeforeDialing(t *testing.T) {
	rec := NewMemoryRecorder(&settings.Remote{Host: "pc2"})
	_, err := Prepare(context.Background(), prepare.Options{Mmproj: filepath.Join(t.TempDir(), "nope.gguf"), Model: "x"}, rec)
	if err == nil || !strings.Contains(err.Error(), "nope.gguf is not a file on this PC") {
		t.Fatalf("err = %v", err)
	}
}

func TestRecorders(t *testing.T) {
	RecorderContract(t, NewMemoryRecorder(nil))
}

// RecorderContract checks what every Recorder does (the backend's and the
// API's are checked with it in owner_test.go).
func RecorderContract(t *testing.T, rec Recorder) {
	t.Helper()
	ctx := context.Background()
	// errors.Is in-process; the message through the control API.
	if err := rec.RecordPrepare(ctx, prepare.Result{NEmbd: 1}); err == nil || !strings.Contains(err.Error(), ErrNotPaired.Error()) {
		t.Errorf("prepare before pairing: %v", err)
	}
	h1, h2, h3 := testHostKey(t), testHostKey(t), testHostKey(t)
	a := settings.Remote{Host: "pc2", Port: 22, User: "u", HostKey: h1, OS: "linux", Arch: "amd64", MAC: "aa:bb:cc:dd:ee:ff"}
	if err := rec.RecordPairing(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := rec.RecordPrepare(ctx, prepare.Result{OS: "linux", Arch: "amd64", RemoteDir: "/d", EncoderPath: "strata-vision", NEmbd: 2560}); err != nil {
		t.Fatal(err)
	}
	// Pairing the same PC again keeps prepare's findings and the MAC
	// when none was found this time.
	b := a
	b.HostKey, b.MAC = h2, ""
	if err := rec.RecordPairing(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, err := rec.Paired(ctx)
	if err != nil || got == nil || got.HostKey != h2 || got.NEmbd != 2560 || got.RemoteDir != "/d" || got.MAC != a.MAC {
		t.Fatalf("after re-pairing: %+v %v", got, err)
	}
	// Another PC starts afresh.
	c := settings.Remote{Host: "pc3", HostKey: h3}
	rec.RecordPairing(ctx, c)
	if got, _ := rec.Paired(ctx); got.NEmbd != 0 || got.Host != "pc3" {
		t.Errorf("another PC kept the old one's findings: %+v", got)
	}
	if err := rec.RecordUnpair(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.Paired(ctx); got != nil {
		t.Errorf("after unpair: %+v", got)
	}
}

// testHostKey is a new ed25519 public key in authorized_keys form.
func testHostKey(t *testing.T) string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ssh.NewPublicKey(pub)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
