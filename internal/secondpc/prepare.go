package secondpc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// PrepareChoices are what a person may set instead of what Strata's config
// says ("" and 0 and nil: take the config's).
type PrepareChoices struct {
	Mmproj, Model string
	// EncoderPath is strata-vision already on the second PC.
	EncoderPath string
	// LocalEncoder is a strata-vision here to copy (default: the install's
	// engine/strata-vision, when the second PC has this PC's OS and arch).
	LocalEncoder string
	// RemoteDir replaces the recorded folder on the second PC.
	RemoteDir string
	// GPU replaces the config's vision.gpu (nil: follow the config, never forced).
	GPU                *bool
	Threads, MaxTokens int
}

// PrepareOptions builds prepare.Prepare's inputs for the paired second PC:
// the mmproj and model from the config's vision block, resolved as Strata
// resolves them (strataconfig: the config's cwd, else the install folder),
// gpu and max_tokens as the config says, unless c says otherwise. cfg may be
// nil when c names both files.
func PrepareOptions(cfg *strataconfig.Config, paired settings.Remote, c PrepareChoices) (prepare.Options, error) {
	o := prepare.Options{Remote: paired, LocalOS: runtime.GOOS, LocalArch: runtime.GOARCH}
	o.Mmproj, o.Model, o.EncoderPath, o.LocalEncoder = c.Mmproj, c.Model, c.EncoderPath, c.LocalEncoder
	o.Threads, o.MaxTokens = c.Threads, c.MaxTokens
	if c.RemoteDir != "" {
		o.Remote.RemoteDir = c.RemoteDir
	}
	if cfg != nil {
		mm, model := cfg.VisionFiles()
		if o.Mmproj == "" {
			o.Mmproj = mm
		}
		if o.Model == "" {
			o.Model = model
		}
		if cfg.Vision != nil {
			o.GPU = cfg.Vision.GPU
			if o.MaxTokens == 0 {
				o.MaxTokens = cfg.Vision.MaxTokens
			}
		}
		if o.LocalEncoder == "" {
			o.LocalEncoder = cfg.LocalEncoder()
		}
	}
	if c.GPU != nil {
		o.GPU = *c.GPU
	}
	// What the config names is the install owner's choice: sent only when
	// the owner could read it (no link in the owner's folder, a regular
	// file the owner may read): a root process never sends a second PC a
	// file the owner could not read (asowner).
	if cfg != nil {
		if a, err := asowner.For(cfg.Root); err == nil && a != nil {
			for _, f := range []struct{ key, path, chosen string }{{"vision.mmproj", o.Mmproj, c.Mmproj}, {"vision.model", o.Model, c.Model}, {"engine/strata-vision", o.LocalEncoder, c.LocalEncoder}} {
				if f.path == "" || f.chosen != "" {
					continue
				}
				if err := asowner.CouldRead(f.path, a); err != nil {
					return o, fmt.Errorf("%s of %s is not sent to the second PC: %v. Name a file %s may read, or pass the file yourself (--mmproj FILE --model FILE)", f.key, cfg.Path, err, a.Name)
				}
			}
		}
	}
	if o.Mmproj == "" || o.Model == "" {
		where := "the Strata config has no vision block"
		if cfg != nil {
			where = cfg.Path + " has no vision block"
		}
		return o, fmt.Errorf("cannot tell which mmproj and model to send: %s; turn vision on in Strata's setup first, or name both files (--mmproj FILE --model FILE)", where)
	}
	return o, nil
}

// Prepare runs prepare.Prepare and records the result through rec.
// The mmproj and the model are checked here first, so a wrong path is
// named before anything is sent.
func Prepare(ctx context.Context, o prepare.Options, rec Recorder) (*prepare.Result, error) {
	for _, f := range []struct{ what, path string }{{"vision projector (mmproj)", o.Mmproj}, {"text model", o.Model}} {
		if st, err := os.Stat(f.path); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("the %s %s is not a file on this PC; check vision.mmproj and vision.model in Strata's config (relative paths are taken from its cwd, else the Strata folder), or name the files (--mmproj FILE --model FILE)", f.what, f.path)
		}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	res, err := prepare.Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := rec.RecordPrepare(ctx, *res); err != nil {
		return res, fmt.Errorf("the second PC is ready, but recording it failed: %w", err)
	}
	return res, nil
}

// AgentFinder finds the strata-vision-relay build for the second PC's OS
// and architecture.
type AgentFinder struct {
	// Path is a build the user named (--agent-binary): used as is.
	Path string
	// Dir is where to look (default: the folder of this program).
	Dir string
	// BuildDir, when set and `go` is on PATH, is where a cross-compile from
	// this source checkout goes when no build is found (developers' CLI).
	BuildDir string
}

// Find returns the agent for goos/goarch: Path; this program's own folder
// (this PC's build when the platforms match), <os>-<arch>/ there (the
// installer's layout), bin/<os>-<arch>/ (`make build`'s), or
// strata-vision-relay-<os>-<arch>; else a cross-compile into BuildDir.
func (a AgentFinder) Find(goos, goarch string) (string, error) {
	if a.Path != "" {
		return a.Path, nil
	}
	name := remote.AgentName(goos)
	here := a.Dir
	if here == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		here = filepath.Dir(exe)
	}
	var cands []string
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		cands = append(cands, filepath.Join(here, name))
	}
	cands = append(cands,
		filepath.Join(here, goos+"-"+goarch, name),
		filepath.Join(here, "bin", goos+"-"+goarch, name),
		filepath.Join(here, "strata-vision-relay-"+goos+"-"+goarch+filepath.Ext(name)))
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	if a.BuildDir != "" {
		if goBin, err := exec.LookPath("go"); err == nil {
			out := filepath.Join(a.BuildDir, "strata-vision-relay-"+goos+"-"+goarch+filepath.Ext(name))
			cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "github.com/strata-companion/companion/relay")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
			if err := cmd.Run(); err == nil {
				return out, nil
			}
		}
	}
	return "", fmt.Errorf("no strata-vision-relay build for %s/%s beside %s (looked for %s); reinstall Strata Companion, or pass --agent-binary FILE",
		goos, goarch, here, strings.Join(cands, ", "))
}
