package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// `strata-service remote prepare`: put what the second PC needs there (the
// agent, the mmproj, a vocabulary stub of the text model, strata-vision when
// this PC's build fits) and start the encoder there once to see READY. The
// work is in internal/secondpc (the wizard calls the same); this file only
// has the flags and prints the answer.
func remotePrepareCmd(env *cliEnv) *ffcli.Command {
	var (
		mmproj, model, encoder, localEncoder, agentBin, remoteDir string
		gpu                                                       bool
		threads, maxTokens                                        int
	)
	return &ffcli.Command{
		Name:       "prepare",
		ShortHelp:  "put the agent, the mmproj and a vocabulary stub on the second PC and check its encoder starts",
		ShortUsage: "strata-service remote prepare [--mmproj FILE --model FILE] [--encoder PATH] [flags] (the paired PC; no host)",
		FlagSet: env.flagSet("remote prepare", func(fs *flag.FlagSet) {
			fs.StringVar(&mmproj, "mmproj", "", "the vision projector GGUF here (default: the Strata config's vision.mmproj)")
			fs.StringVar(&model, "model", "", "the text model's shard 1 here (default: the Strata config's vision.model)")
			fs.StringVar(&encoder, "encoder", "", "strata-vision already on the second PC (absolute, or relative to the remote folder)")
			fs.StringVar(&localEncoder, "local-encoder", "", "a strata-vision here to copy when the second PC has this PC's OS and architecture (default: ROOT/engine/strata-vision)")
			fs.StringVar(&agentBin, "agent-binary", "", agentBinaryUsage)
			fs.StringVar(&remoteDir, "remote-dir", "", "the folder on the second PC (default: the settings', else ~/"+prepare.DefaultRemoteDir+")")
			fs.BoolVar(&gpu, "gpu", false, "check the encoder on the second PC's GPU (default: as the Strata config says)")
			fs.IntVar(&threads, "threads", 0, "CPU encoder threads on the second PC")
			fs.IntVar(&maxTokens, "max-tokens", 0, "image tokens per picture")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return &exitCode{code: 2, err: errors.New("usage: strata-service remote prepare [--mmproj FILE --model FILE] [--encoder PATH]")}
			}
			rec := remoteRecorder(ctx)
			rm, err := rec.Paired(ctx)
			if err != nil {
				return err
			}
			if rm == nil || rm.Host == "" || rm.HostKey == "" {
				return errors.New("no second PC is paired; run `strata-service remote pair [user@]host` first")
			}
			choices := secondpc.PrepareChoices{Mmproj: mmproj, Model: model, EncoderPath: encoder,
				LocalEncoder: localEncoder, RemoteDir: remoteDir, Threads: threads, MaxTokens: maxTokens}
			if gpu {
				choices.GPU = &gpu
			}
			// What the flags leave out comes from the Strata config in use.
			var cfg *strataconfig.Config
			st, _ := settings.LoadDefault()
			if in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: env.strataRoot, Config: env.configPath, Settings: st}); err == nil {
				cfg, _ = strataconfig.Read(in.ConfigInUse)
			}
			o, err := secondpc.PrepareOptions(cfg, *rm, choices)
			if err != nil {
				return err
			}
			o.Progress = env.stderr
			o.AgentBinary = secondpc.AgentFinder{Path: agentBin, BuildDir: os.TempDir()}.Find
			res, err := secondpc.Prepare(ctx, o, rec)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "The second PC %s is ready: its encoder answered READY %d.\n", rm.Host, res.NEmbd)
			fmt.Fprintf(env.stdout, "  Folder there: %s\n  Encoder: %s\n", res.RemoteDir, res.EncoderPath)
			if w := res.Where; w != nil {
				switch {
				case w.Device == "gpu":
					fmt.Fprintf(env.stdout, "  Pictures are read on its GPU %s (%s).\n", w.GPU, w.VRAMWords())
				case w.Degraded():
					fmt.Fprintf(env.stdout, "  Pictures are read on its CPU, not its GPU: %s. Check its NVIDIA driver, then run this again.\n", w.Reason)
				default:
					fmt.Fprintln(env.stdout, "  Pictures are read on its CPU (prepare found no NVIDIA GPU there).")
				}
			}
			fmt.Fprintln(env.stdout, "Next: strata-service vision remote")
			return nil
		},
	}
}
