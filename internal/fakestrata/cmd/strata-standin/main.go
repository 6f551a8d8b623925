// Command strata-standin stands in for Strata's serve/server.py in tests and
// demos: `strata-standin [serve/server.py] --engine strata --config C --port P`.
//
// `strata-standin make-root DIR [--port N] [--step D] [--api-key K] [--mode M]`
// lays out a fake Strata install in DIR that runs this binary, for demos
// (`strata-service run --strata-root DIR`). See docs/service.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/probe"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "make-root" {
		os.Exit(makeRoot(os.Args[2:]))
	}
	os.Exit(fakestrata.Main(os.Args[1:]))
}

func makeRoot(args []string) int {
	fs := flag.NewFlagSet("strata-standin make-root", flag.ContinueOnError)
	port := fs.Int("port", 0, "the config's port (default: a free one now)")
	step := fs.String("step", "1s", "the pause between startup lines")
	key := fs.String("api-key", "", "the config's api_key")
	mode := fs.String("mode", "", "misbehaviour (see STRATA_STANDIN_MODE)")
	tag := fs.String("tag", "demo", "the config's tag (strata-<tag>.json)")
	gpu := fs.String("gpu", "probe", "the GPU the stand-in plays Strata on: probe (this PC's, as a real Strata would see it), none, or NAME:TOTAL_MIB")
	encoder := fs.String("encoder", "", "a strata-vision stand-in to install as engine/strata-vision; the config then has GPU vision, as Strata's setup writes it")
	dir := ""
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if dir == "" {
		dir = fs.Arg(0)
	}
	if dir == "" {
		fmt.Fprintln(os.Stderr, "usage: strata-standin make-root DIR [--port N] [--step 1s] [--api-key K] [--mode M]")
		return 2
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.Abs(self)
	}
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	var r *fakestrata.Root
	if err == nil {
		o := fakestrata.RootOptions{Port: *port, Step: *step, APIKey: *key, Mode: *mode, Tag: *tag}
		g := *gpu
		if g == "probe" {
			g = thisPCsGPU()
		}
		if _, _, err = fakestrata.ParseGPU(g); err == nil {
			o.Env = append(o.Env, fakestrata.EnvGPU+"="+g)
		}
		if *encoder != "" {
			err = withVision(dir, *encoder, *tag, &o)
		}
		if err == nil {
			r, err = fakestrata.MakeRoot(dir, self, o)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-standin make-root:", err)
		return 1
	}
	fmt.Printf("A fake Strata install is in %s (config %s, port %d).\n", r.Dir, r.Config, r.Port)
	fmt.Printf("The stand-in plays Strata on %s.\n", gpuWords(r))
	if *encoder != "" {
		fmt.Println("Its config reads pictures on the GPU, as Strata's setup writes it; `strata-service vision` moves that where the probe recommends.")
	}
	return 0
}

// thisPCsGPU is EnvGPU for the first NVIDIA GPU that can run Strata here,
// as the probe finds it; "none" without one.
func thisPCsGPU() string {
	rep := probe.Probe(context.Background(), probe.Options{})
	for _, g := range rep.GPUs {
		if probe.Usable(g) && g.TotalMiB > 0 {
			return fmt.Sprintf("%s:%d", g.Name, g.TotalMiB)
		}
	}
	return "none"
}

func gpuWords(r *fakestrata.Root) string {
	g, _, _ := fakestrata.ParseGPU(r.GPU)
	if g == nil {
		return "this PC, which has no CUDA GPU: a real Strata has no VRAM for its expert cache there, so the stand-in reports none (the experts are read from RAM)"
	}
	return fmt.Sprintf("%s (%d MiB), as the probe found it: its expert cache is the reference machine's (RTX 5080 16 GB) moved by the difference in VRAM", g.Name, g.TotalMiB)
}

// withVision installs the encoder stand-in and placeholder model files, and
// adds the vision block and arguments Strata's setup writes for GPU vision.
func withVision(dir, encoder, tag string, o *fakestrata.RootOptions) error {
	enc, err := os.ReadFile(encoder)
	if err != nil {
		return fmt.Errorf("reading the encoder stand-in: %w", err)
	}
	for _, d := range []string{"engine", "models"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "engine", "strata-vision"), enc, 0o755); err != nil {
		return err
	}
	// Small but valid GGUF files: the stand-in encoder reads the mmproj's
	// n_embd and the model's vocabulary, as the real one does.
	models := filepath.Join(dir, "models")
	for _, f := range []string{"mmproj-" + tag + "-BF16.gguf", "mmproj-" + tag + "-Q8_0.gguf"} {
		if err := fakeencoder.WriteMmproj(filepath.Join(models, f), 2560); err != nil {
			return err
		}
	}
	if err := fakeencoder.WriteModel(filepath.Join(models, "model-"+tag+"-00001-of-00002.gguf"), 64); err != nil {
		return err
	}
	o.Extra = map[string]any{
		"args": []string{"-m", "models/model-" + tag + "-00001-of-00002.gguf", "--vision", "--vram-reserve-mib", "700"},
		"vision": map[string]any{
			"exe":        "engine/strata-vision",
			"mmproj":     "models/mmproj-" + tag + "-BF16.gguf",
			"model":      "models/model-" + tag + "-00001-of-00002.gguf",
			"gpu":        true,
			"max_tokens": 1024,
		},
		"cwd": dir,
	}
	return nil
}
