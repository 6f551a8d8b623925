package measure

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// install is a Strata install as setup leaves it with pictures on: the
// projector, the model's shard 1, a config with a vision block, and (when
// encoder is not "") engine/strata-vision.
type install struct {
	root, config, mmproj, model string
}

func newInstall(t *testing.T, encoder string, gpu bool) install {
	t.Helper()
	root := t.TempDir()
	in := install{root: root, config: filepath.Join(root, "strata-test.json"),
		mmproj: filepath.Join(root, "mmproj-BF16.gguf"), model: filepath.Join(root, "model-00001-of-00003.gguf")}
	if err := fakeencoder.WriteMmproj(in.mmproj, 32); err != nil {
		t.Fatal(err)
	}
	if err := fakeencoder.WriteModel(in.model, 20); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	if encoder != "" {
		b, err := os.ReadFile(encoder)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "engine", exeName("strata-vision")), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "engine", "BUILD.json"), []byte(`{"version": "0.9.3", "source": "prebuilt"}`), 0o644)
	g, tokens := "false", 300
	if gpu {
		g, tokens = "true", 1024
	}
	cfg := `{"exe": "engine/strata", "args": ["--vision"], "port": 8095,
  "vision": {"exe": "engine/strata-vision", "mmproj": "mmproj-BF16.gguf", "model": "model-00001-of-00003.gguf", "gpu": ` + g + `, "max_tokens": ` + itoa(tokens) + `}}`
	if err := os.WriteFile(in.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

func itoa(n int) string { return strconv.Itoa(n) }

func (in install) read(t *testing.T) *strataconfig.Config {
	t.Helper()
	c, err := strataconfig.Read(in.config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (in install) inputs(t *testing.T, st *settings.Settings) Inputs {
	if st == nil {
		st = &settings.Settings{}
	}
	return Inputs{Config: in.read(t), Settings: st}
}
