package secondpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/testenv"
)

// Issue 32, Medium: root's `remote prepare` uploaded whatever file
// vision.mmproj named: a link in the owner's install to a root-only file
// went to a second PC of the owner's choosing. Now what the config names
// is sent only when the install's owner could read it.
func TestPrepareSendsOnlyWhatTheOwnerCouldRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root process preparing from another account's install")
	}
	base := t.TempDir()
	testenv.OpenPath(t, base)
	dir := filepath.Join(base, "strata")
	os.Mkdir(dir, 0o755)
	secret := filepath.Join(base, "root-only.bin")
	os.WriteFile(secret, []byte("root's"), 0o600)
	for name, text := range map[string]string{
		"strata-x.json": `{"exe": "engine/strata", "vision": {"exe": "engine/strata-vision", "mmproj": "mm.gguf", "model": "model.gguf"}}`,
		"model.gguf":    "GGUF",
		"own.gguf":      "GGUF",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	os.Symlink(secret, filepath.Join(dir, "mm.gguf"))
	for _, p := range []string{dir, filepath.Join(dir, "strata-x.json"), filepath.Join(dir, "model.gguf"), filepath.Join(dir, "own.gguf")} {
		os.Lchown(p, 65534, 65534)
	}
	cfg, err := strataconfig.Read(filepath.Join(dir, "strata-x.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = PrepareOptions(cfg, settings.Remote{Host: "pc2"}, PrepareChoices{})
	if err == nil || !strings.Contains(err.Error(), "vision.mmproj") || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("a linked mmproj: %v, want it refused", err)
	}
	os.Remove(filepath.Join(dir, "mm.gguf"))
	os.Rename(filepath.Join(dir, "own.gguf"), filepath.Join(dir, "mm.gguf"))
	if o, err := PrepareOptions(cfg, settings.Remote{Host: "pc2"}, PrepareChoices{}); err != nil || o.Mmproj != filepath.Join(dir, "mm.gguf") {
		t.Fatalf("the owner's own mmproj: %+v %v", o, err)
	}
}
