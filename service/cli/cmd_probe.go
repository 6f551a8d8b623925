package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/strata-companion/companion/internal/measure"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
)

// probeJSONSchema is the version of the --json structure (docs/probe.md).
// Adding fields keeps it; renaming or removing one bumps it.
const probeJSONSchema = 1

// probeOutput is what `probe --json` prints.
type probeOutput struct {
	Schema         int                  `json:"schema"`
	Report         *probe.Report        `json:"report"`
	Recommendation probe.Recommendation `json:"recommendation"`
}

// probeCmd is `probe`: this PC, or a second PC with --ssh.
func probeCmd(env *cliEnv) *ffcli.Command {
	var (
		asJSON    bool
		sshTarget string
		smiPath   string
		timeout   time.Duration
		// --ssh: the second PC (cmd_probe_ssh.go)
		login     sshLogin
		remoteDir string
		transfer  int
		// --measure: trial pictures (cmd_probe_measure.go)
		measureAll   bool
		measureBound time.Duration
	)
	return &ffcli.Command{
		Name:       "probe",
		ShortHelp:  "probe this PC's GPUs, VRAM, CPU and RAM (or a second PC with --ssh)",
		ShortUsage: "strata-service probe [--json] [--measure] [--ssh [user@]host[:port]]",
		FlagSet: env.flagSet("probe", func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print the report as JSON (the structure is in docs/probe.md)")
			fs.StringVar(&sshTarget, "ssh", "", "probe a second PC over ssh instead: [user@]host[:port]")
			fs.StringVar(&smiPath, "nvidia-smi", "", "use this nvidia-smi instead of searching PATH and the driver's folders")
			fs.DurationVar(&timeout, "timeout", probe.DefaultTimeout, "how long nvidia-smi may take before it is stopped")
			login.addFlags(fs)
			fs.StringVar(&remoteDir, "remote-dir", "", "with --ssh: the folder on the second PC to look for strata-vision and the model files in (default: the paired PC's, from the settings)")
			fs.IntVar(&transfer, "transfer-mb", 4, "with --ssh: megabytes sent each way to measure the link")
			fs.BoolVar(&measureAll, "measure", false, "read one trial picture on this PC's CPU, its GPU (when it fits) and the paired second PC, show the measured times and keep them in the settings")
			fs.DurationVar(&measureBound, "measure-bound", measure.DefaultBound, "with --measure: how long one trial may take before it is stopped")
		}),
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q (to probe a second PC, use --ssh %s)", args[0], args[0])
			}
			if measureAll && sshTarget != "" {
				return &exitCode{code: 2, err: fmt.Errorf("--measure reads trial pictures through the paired second PC; it does not go with --ssh")}
			}
			if sshTarget != "" {
				return runSSHProbe(ctx, env, &login, sshTarget, remoteDir, transfer, asJSON)
			}
			r := probe.Probe(ctx, probe.Options{NvidiaSMIPath: smiPath, Timeout: timeout})
			// The figures measured here replace the estimates of those
			// places; the trials compare with the estimates themselves.
			rec := probe.RecommendMeasured(r, nil, lastMeasured())
			if measureAll {
				if !asJSON {
					writeProbeText(env.stdout, r, rec, configuredRemote())
					fmt.Fprintln(env.stdout)
				}
				return runMeasure(ctx, env, r, probe.Recommend(r, nil), measureBound, asJSON)
			}
			if asJSON {
				return writeProbeJSON(env.stdout, r, rec)
			}
			writeProbeText(env.stdout, r, rec, configuredRemote())
			return nil
		},
	}
}

func writeProbeJSON(w io.Writer, r *probe.Report, rec probe.Recommendation) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(probeOutput{Schema: probeJSONSchema, Report: r, Recommendation: rec})
}

// lastMeasured is the trial pictures kept in the companion settings (nil:
// none, or no settings).
func lastMeasured() *settings.Measured {
	s, err := settings.LoadDefault()
	if err != nil {
		return nil
	}
	return s.Measured
}

// configuredRemote is the second PC in the companion's settings, if any: the
// local probe does not dial it (that needs --ssh) but says it exists.
func configuredRemote() string {
	s, err := settings.LoadDefault()
	if err != nil || s.Remote == nil || s.Remote.Host == "" {
		return ""
	}
	return s.Remote.Host
}

// writeProbeText prints the short human report.
func writeProbeText(w io.Writer, r *probe.Report, rec probe.Recommendation, remoteHost string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("This PC (%s/%s)", r.OS, r.Arch)
	model := r.CPU.Model
	if model == "" {
		model = "model unknown"
	}
	p("  CPU  %s, %d cores, %d threads", model, r.CPU.Cores, r.CPU.Threads)
	p("  RAM  %s total, %s free", mib(r.RAM.TotalMiB), mib(r.RAM.FreeMiB))
	smi := "nvidia-smi not found"
	if r.NvidiaSMI != "" {
		smi = "nvidia-smi: " + r.NvidiaSMI
		if r.NvidiaQuery == probe.QueryBasic {
			smi += ", basic query (old driver)"
		}
	}
	p("  GPUs (%s)", smi)
	if len(r.GPUs) == 0 {
		p("    none found")
	}
	for _, g := range r.GPUs {
		name := g.Name
		if name == "" {
			name = g.Vendor + " GPU (name not reported)"
		}
		facts := []string{mib(g.TotalMiB) + " total"}
		if g.FreeMiB >= 0 {
			facts = append(facts, mib(g.FreeMiB)+" free")
		}
		if g.Driver != "" {
			facts = append(facts, "driver "+g.Driver)
		}
		if g.ComputeCap != "" {
			facts = append(facts, "compute "+g.ComputeCap)
		}
		if g.Display != nil && *g.Display {
			facts = append(facts, "drives a display")
		}
		facts = append(facts, "from "+g.Source)
		p("    %d  %s: %s", g.Index, name, strings.Join(facts, ", "))
	}
	if len(r.Problems) > 0 {
		p("")
		p("Findings")
		for _, f := range r.Problems {
			writeFinding(w, f)
		}
	}
	p("")
	where := placementWords(rec)
	p("Recommendation: read pictures %s", where)
	p("  %s", rec.Reason)
	p("  Expected per 1024x1024 picture:")
	for _, e := range rec.Estimates {
		name := string(e.Placement)
		if e.Device != nil {
			name += fmt.Sprintf(" %d", *e.Device)
		}
		if !e.Available {
			p("    %-8s not possible: %s", name, e.Basis)
			continue
		}
		vram := "uses no GPU"
		if e.EncoderVRAMMiB > 0 {
			vram = fmt.Sprintf("takes %d MiB of VRAM on the serving GPU", e.EncoderVRAMMiB)
		} else if e.FreesMiB > 0 {
			vram = fmt.Sprintf("frees %d MiB of VRAM on the serving GPU", e.FreesMiB)
		}
		if e.MeasuredHere {
			p("    %-8s %s, %s", name, settings.Secs(e.PictureSeconds), vram)
			p("             %s", e.Basis)
			continue
		}
		p("    %-8s %.1f s, %s", name, e.PictureSeconds, vram)
		p("             rests on: %s", e.Basis)
	}
	// The recommendation's warnings repeat the findings that decided it;
	// printed above already, they are not printed twice.
	said := map[probe.Finding]bool{}
	for _, f := range r.Problems {
		said[f] = true
	}
	for _, f := range rec.Warnings {
		if !said[f] {
			writeFinding(w, f)
		}
	}
	if remoteHost != "" {
		p("  A second PC (%s) is set up: run \"strata-service probe --ssh %s\" to include it.", remoteHost, remoteHost)
	}
}

func writeFinding(w io.Writer, f probe.Finding) {
	fmt.Fprintf(w, "  [%s] %s\n", f.Severity, f.What)
	if f.Fix != "" {
		fmt.Fprintf(w, "          what to do: %s\n", f.Fix)
	}
}

func placementWords(rec probe.Recommendation) string {
	w := rec.Placement.Words("") // the placements table's words
	switch {
	case !rec.Placement.ReadsPictures():
		return "nowhere: " + w
	case rec.Placement == settings.PlacementGPU && rec.Device != nil:
		return fmt.Sprintf("%s %d (vision.cuda_device %d)", w, *rec.Device, *rec.Device)
	}
	return w
}

func mib(v int) string {
	if v < 0 {
		return "unknown"
	}
	if v >= 1024 {
		return fmt.Sprintf("%d MiB (%.1f GiB)", v, float64(v)/1024)
	}
	return fmt.Sprintf("%d MiB", v)
}
