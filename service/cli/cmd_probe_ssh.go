package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/linkprobe"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// sshProbeJSONSchema versions `probe --ssh --json` (docs/second-pc.md).
const sshProbeJSONSchema = 1

// sshProbeOutput is what `probe --ssh --json` prints.
type sshProbeOutput struct {
	Schema    int    `json:"schema"`
	Target    string `json:"target"` // user@host:port as dialed
	Reachable bool   `json:"reachable"`
	// Reason is one word-group when not reachable: refused, timed out, no
	// route, unknown host, not ssh, closed, auth failed, host key unknown,
	// host key changed, canceled, failed.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// HostKeyFingerprint is the key the server presented (to compare and
	// accept with --accept-host-key when the host is unknown).
	HostKeyFingerprint string `json:"host_key_fingerprint,omitempty"`
	// HostKeyPinned says this run pinned the host key (an accepted first contact).
	HostKeyPinned bool              `json:"host_key_pinned,omitempty"`
	Remote        *linkprobe.Result `json:"remote,omitempty"`
	// Recommendation compares the second PC with this PC's GPU and CPU.
	Recommendation *probe.Recommendation `json:"recommendation,omitempty"`
	// Wake says whether the relay can wake this PC (only for the paired PC).
	Wake *sshProbeWake `json:"wake,omitempty"`
}

// sshProbeWake is Wake-on-LAN for the paired second PC, as the settings say.
type sshProbeWake struct {
	MAC       string `json:"mac,omitempty"` // recorded at pairing
	Enabled   bool   `json:"enabled"`
	Broadcast string `json:"broadcast,omitempty"`
	Port      int    `json:"port,omitempty"`
	WaitS     int    `json:"wait_s,omitempty"`
	// Ready: a MAC is recorded and wake is on, so a picture that finds the
	// PC asleep sends the magic packet.
	Ready bool `json:"ready"`
	// Hint says what to do when it is not ready.
	Hint string `json:"hint,omitempty"`
}

// wakeSetup reads the paired PC's wake setup (defaults filled in).
func wakeSetup(rm *settings.Remote) *sshProbeWake {
	if rm == nil {
		return nil
	}
	w := &sshProbeWake{MAC: rm.MAC, Broadcast: "255.255.255.255", Port: 9, WaitS: 60}
	if rm.Wake != nil {
		w.Enabled = rm.Wake.Enabled
		if rm.Wake.Broadcast != "" {
			w.Broadcast = rm.Wake.Broadcast
		}
		if rm.Wake.Port > 0 {
			w.Port = rm.Wake.Port
		}
		if rm.Wake.WaitS > 0 {
			w.WaitS = rm.Wake.WaitS
		}
	}
	w.Ready = w.MAC != "" && w.Enabled
	switch {
	case w.MAC == "":
		w.Hint = "no network card address (MAC) recorded: pair the PC again (strata-service remote pair) or set it with strata-service settings --mac aa:bb:cc:dd:ee:ff"
	case !w.Enabled:
		w.Hint = "wake is off: turn it on with strata-service settings --wake on"
	}
	return w
}

// wakeLine is the text output's wake line.
func wakeLine(w *sshProbeWake) string {
	if w.Ready {
		return fmt.Sprintf("  Wake   set up: a magic packet for %s to %s port %d when it does not answer, then up to %d s for ssh", w.MAC, w.Broadcast, w.Port, w.WaitS)
	}
	what := "not set up"
	if w.MAC != "" {
		what = "not set up (MAC " + w.MAC + " recorded)"
	}
	return "  Wake   " + what + ": " + w.Hint
}

func runSSHProbe(ctx context.Context, env *cliEnv, login *sshLogin, target, remoteDir string, transferMB int, asJSON bool) error {
	ep, err := sshx.ParseEndpoint(target)
	if err != nil {
		return &exitCode{code: 2, err: err}
	}
	opts := linkprobe.Options{RemoteDir: remoteDir, TransferBytes: int64(transferMB) << 20}

	// The paired PC: its folder, and the companion's own key as one more
	// way in (so a probe needs no password once paired).
	var extraKeys []string
	var wake *sshProbeWake
	if rm, err := remoteRecorder(ctx).Paired(ctx); err == nil && rm != nil && rm.Host == ep.Host &&
		(rm.Port == ep.Port || ep.Port == 0) {
		wake = wakeSetup(rm)
		// Its folder, encoder, and the agent there (asked when the
		// companion's key runs only the agent).
		opts = secondpc.PairedProbeOptions(opts, rm)
		extraKeys = append(extraKeys, rm.KeyFile)
	}
	l, err := login.login(env, target, extraKeys...)
	if err != nil {
		return &exitCode{code: 2, err: err}
	}
	ep = l.Endpoint
	out := sshProbeOutput{Schema: sshProbeJSONSchema, Target: ep.String(), Wake: wake}
	if !asJSON {
		fmt.Fprintf(env.stderr, "... connecting to %s and measuring the second PC and the link (a connection gives up after %s)\n", ep, login.timeout)
	}
	pr, err := secondpc.Probe(ctx, l, opts, true)
	if err != nil {
		out.Reason = string(sshx.Classify(err))
		out.Error = err.Error() + hostKeyHint(err)
		var hk *sshx.HostKeyError
		if errors.As(err, &hk) {
			out.HostKeyFingerprint = hk.Fingerprint
		}
		if asJSON {
			writeJSON(env.stdout, out)
		} else {
			fmt.Fprintf(env.stdout, "Second PC %s: NOT reachable (%s)\n  %s\n", ep, out.Reason, out.Error)
			if out.Wake != nil {
				// A sleeping PC is when wake matters.
				fmt.Fprintln(env.stdout, wakeLine(out.Wake))
			}
		}
		return &exitCode{code: 1}
	}
	out.Reachable, out.HostKeyPinned, out.HostKeyFingerprint, out.Remote = true, pr.Pinned, pr.HostKeyFingerprint, pr.Link
	local := probe.Probe(ctx, probe.Options{})
	rec := probe.RecommendMeasured(local, out.Remote.Facts(), lastMeasured())
	out.Recommendation = &rec
	if asJSON {
		return writeJSON(env.stdout, out)
	}
	writeSSHProbeText(env.stdout, ep, out, local)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeSSHProbeText(w io.Writer, ep sshx.Endpoint, out sshProbeOutput, local *probe.Report) {
	r := out.Remote
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("Second PC %s: reachable", ep)
	if out.HostKeyPinned {
		p("  host key %s trusted and pinned", out.HostKeyFingerprint)
	} else {
		p("  host key %s (pinned)", out.HostKeyFingerprint)
	}
	if out.Wake != nil {
		p("%s", wakeLine(out.Wake))
	}
	p("  Asked  %s", viaWords(r.Via))
	osLine := "unknown"
	if r.OS != "" {
		osLine = r.OS + "/" + r.Arch
	}
	p("  OS     %s (%s)", osLine, strings.TrimSpace(r.Uname))
	q := ""
	if r.NvidiaQuery == probe.QueryBasic {
		q = ", basic query (old driver)"
	}
	p("  GPUs (nvidia-smi%s)", q)
	if len(r.GPUs) == 0 {
		p("    none found")
	}
	for _, g := range r.GPUs {
		facts := []string{mib(g.TotalMiB) + " total"}
		if g.FreeMiB >= 0 {
			facts = append(facts, mib(g.FreeMiB)+" free")
		}
		if g.Driver != "" {
			facts = append(facts, "driver "+g.Driver)
		}
		p("    %d  %s: %s", g.Index, g.Name, strings.Join(facts, ", "))
	}
	if r.RemoteDir != "" {
		p("  Files in %s", r.RemoteDir)
		if r.Encoder != nil {
			p("    %-8s %s", presence(r.Encoder.Present), r.Encoder.Path)
		}
		for _, f := range r.ModelFiles {
			p("    %-8s %s", presence(f.Present), f.Path)
		}
		if len(r.ModelFiles) == 0 {
			p("    no model files (*.gguf)")
		}
	} else {
		p("  Files  not checked (no remote folder yet: --remote-dir, or remote prepare)")
	}
	link := "not measured"
	if r.RTT > 0 {
		link = fmt.Sprintf("round trip %s (median of %d)", r.RTT.Round(10*time.Microsecond), len(r.RTTSamples))
	}
	p("  Link   %s; up %s, down %s (%d MiB each way through this ssh connection)",
		link, speed(r.UpBytesPerSec), speed(r.DownBytesPerSec), r.TransferBytes>>20)
	rec := out.Recommendation
	measured := false
	for _, e := range rec.Estimates {
		if e.Placement == settings.PlacementRemote && e.MeasuredHere {
			p("  One 1024x1024 picture read there: %s", settings.Secs(e.PictureSeconds))
			p("    %s", e.Basis)
			measured = true
		}
	}
	switch {
	case measured:
	case r.Estimate.Available:
		p("  One 1024x1024 picture read there: about %.1f s", r.Estimate.PictureSeconds)
		p("    rests on: %s", r.Estimate.Basis)
	default:
		p("  Pictures cannot be read there: %s", r.Estimate.Basis)
	}
	if len(r.Findings) > 0 {
		p("")
		p("Findings on the second PC")
		for _, f := range r.Findings {
			writeFinding(w, f)
		}
	}
	p("")
	p("Compared with this PC (%s/%s), per 1024x1024 picture:", local.OS, local.Arch)
	for _, e := range rec.Estimates {
		name := string(e.Placement)
		if e.Device != nil && e.Placement == settings.PlacementGPU {
			name += fmt.Sprintf(" %d", *e.Device)
		}
		if !e.Available {
			p("    %-8s not possible: %s", name, e.Basis)
			continue
		}
		if e.MeasuredHere {
			p("    %-8s %s (measured here)", name, settings.Secs(e.PictureSeconds))
			continue
		}
		p("    %-8s %.1f s", name, e.PictureSeconds)
	}
	p("Recommendation: read pictures %s", placementWords(*rec))
	p("  %s", rec.Reason)
	for _, f := range rec.Warnings {
		writeFinding(w, f)
	}
}

// viaWords says how the second PC was asked (linkprobe.Result.Via).
func viaWords(via string) string {
	if via == linkprobe.ViaAgent {
		return "through the Strata Companion agent there (this key runs only the agent, so the agent answered the probe)"
	}
	return "through the login shell there (plain commands: uname, nvidia-smi, file checks)"
}

func presence(ok bool) string {
	if ok {
		return "present"
	}
	return "MISSING"
}

func speed(bps float64) string {
	switch {
	case bps <= 0:
		return "not measured"
	case bps >= 1e9:
		return fmt.Sprintf("%.2f GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f MB/s", bps/1e6)
	}
	return fmt.Sprintf("%.0f kB/s", bps/1e3)
}
