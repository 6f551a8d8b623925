package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// `strata-service remote prepare`: put what the second PC needs there (the
// agent, the mmproj, a vocabulary stub of the text model, strata-vision when
// this PC's build fits) and start the encoder there once to see READY. The
// work is in relay.Prepare; this file only finds the inputs and records the
// result in the companion settings.
func init() {
	var (
		mmproj, model, encoder, localEncoder, agentBin, remoteDir string
		gpu                                                       bool
		threads, maxTokens                                        int
	)
	remoteSubcommands["prepare"] = remoteSubcommand{
		summary: "put the agent, the mmproj and a vocabulary stub on the second PC and check its encoder starts",
		setFlags: func(fs *flag.FlagSet) {
			fs.StringVar(&mmproj, "mmproj", "", "the vision projector GGUF here (default: the Strata config's vision.mmproj)")
			fs.StringVar(&model, "model", "", "the text model's shard 1 here (default: the Strata config's vision.model)")
			fs.StringVar(&encoder, "encoder", "", "strata-vision already on the second PC (absolute, or relative to the remote folder)")
			fs.StringVar(&localEncoder, "local-encoder", "", "a strata-vision here to copy when the second PC has this PC's OS and architecture (default: ROOT/engine/strata-vision)")
			fs.StringVar(&agentBin, "agent-binary", "", "the strata-vision-relay build for the second PC (default: found beside this program)")
			fs.StringVar(&remoteDir, "remote-dir", "", "the folder on the second PC (default: the settings', else ~/"+relay.DefaultRemoteDir+")")
			fs.BoolVar(&gpu, "gpu", false, "check the encoder on the second PC's GPU (default: as the Strata config says)")
			fs.IntVar(&threads, "threads", 0, "CPU encoder threads on the second PC")
			fs.IntVar(&maxTokens, "max-tokens", 0, "image tokens per picture")
		},
		run: func(ctx context.Context, env *cliEnv, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: errors.New("usage: strata-service remote prepare [--mmproj FILE --model FILE] [--encoder PATH]")}
			}
			settingsPath := locations.SettingsFile()
			st, err := settings.Load(settingsPath)
			if err != nil {
				return err
			}
			if st.Remote == nil || st.Remote.Host == "" || st.Remote.HostKey == "" {
				return errors.New("no second PC is paired; run `strata-service remote pair [user@]host` first")
			}
			o := relay.PrepareOptions{Remote: *st.Remote, Mmproj: mmproj, Model: model, EncoderPath: encoder,
				LocalEncoder: localEncoder, LocalOS: runtime.GOOS, LocalArch: runtime.GOARCH,
				GPU: gpu, Threads: threads, MaxTokens: maxTokens, Progress: env.stderr}
			if remoteDir != "" {
				o.Remote.RemoteDir = remoteDir
			}
			// Fill what the flags left out from the Strata config in use.
			if in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot, Config: env.configPath, Settings: st}); err == nil {
				if cfg, err := strataconfig.Read(in.ConfigInUse); err == nil && cfg.Vision != nil {
					base := cfg.Cwd
					if base == "" {
						base = in.Root
					}
					abs := func(p string) string {
						if p != "" && !filepath.IsAbs(p) {
							return filepath.Join(base, p)
						}
						return p
					}
					if o.Mmproj == "" {
						o.Mmproj = abs(cfg.Vision.MMProj)
					}
					if o.Model == "" {
						o.Model = abs(cfg.Vision.Model)
					}
					if !gpu {
						o.GPU = cfg.Vision.GPU
					}
					if maxTokens == 0 {
						o.MaxTokens = cfg.Vision.MaxTokens
					}
				}
				if o.LocalEncoder == "" {
					name := "strata-vision"
					if runtime.GOOS == "windows" {
						name += ".exe"
					}
					if p := filepath.Join(in.Root, "engine", name); fileExists(p) {
						o.LocalEncoder = p
					}
				}
			}
			if o.Mmproj == "" || o.Model == "" {
				return errors.New("cannot tell which mmproj and model to send: the Strata config has no vision block; pass --mmproj FILE --model FILE")
			}
			o.AgentBinary = func(goos, goarch string) (string, error) { return findAgentBinary(agentBin, goos, goarch) }

			res, err := relay.Prepare(ctx, o)
			if err != nil {
				return err
			}
			// Record what the relay needs, re-reading the settings so a
			// change made meanwhile (pairing) is kept.
			st, err = settings.Load(settingsPath)
			if err != nil || st.Remote == nil {
				return fmt.Errorf("the second PC is ready, but the settings could not be updated: %v", err)
			}
			st.Remote.RemoteDir, st.Remote.OS, st.Remote.Arch = res.RemoteDir, res.OS, res.Arch
			st.Remote.EncoderPath, st.Remote.NEmbd = res.EncoderPath, res.NEmbd
			if err := st.Save(settingsPath); err != nil {
				return fmt.Errorf("the second PC is ready, but %v", err)
			}
			fmt.Fprintf(env.stdout, "The second PC %s is ready: its encoder answered READY %d.\n", st.Remote.Host, res.NEmbd)
			fmt.Fprintf(env.stdout, "  Folder there: %s\n  Encoder: %s\n", res.RemoteDir, res.EncoderPath)
			fmt.Fprintln(env.stdout, "Next: strata-service vision remote")
			return nil
		},
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// findAgentBinary looks for a strata-vision-relay build for goos/goarch:
// the --agent-binary flag; beside this program (this PC's own build when the
// platforms match, or bin/<os>-<arch>/ as `make build` lays them out); else,
// in a source checkout with Go installed, a cross-compile.
func findAgentBinary(flagPath, goos, goarch string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	name := relay.AgentName(goos)
	exe, _ := os.Executable()
	here := filepath.Dir(exe)
	var candidates []string
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		candidates = append(candidates, filepath.Join(here, name))
	}
	candidates = append(candidates,
		filepath.Join(here, goos+"-"+goarch, name),
		filepath.Join(here, "bin", goos+"-"+goarch, name),
		filepath.Join(here, "strata-vision-relay-"+goos+"-"+goarch+filepath.Ext(name)))
	for _, c := range candidates {
		if fileExists(c) {
			return c, nil
		}
	}
	if goBin, err := exec.LookPath("go"); err == nil {
		out := filepath.Join(os.TempDir(), "strata-vision-relay-"+goos+"-"+goarch+filepath.Ext(name))
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "github.com/strata-companion/companion/relay")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		if err := cmd.Run(); err == nil {
			return out, nil
		}
	}
	return "", fmt.Errorf("no strata-vision-relay build for %s/%s beside %s (looked for %s); pass --agent-binary FILE", goos, goarch, exe, candidates[len(candidates)-1])
}
