package probe

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// What people measured with Strata (docs/strata.md: RTX 5080 16 GB server, second
// PC with an RTX 3060 laptop GPU over 10 GbE, one 1024x1024 picture at 1024
// image tokens). Every estimate starts from one of these.
// An estimate names "the reference machine" wherever it quotes one of
// them, so no figure reads as measured on this PC; it names only the part
// of that machine it rests on (its CPU, its RTX 5080), not the whole.

const (
	measuredGPUSeconds     = 1.63  // local GPU, RTX 5080
	measuredEncoderVRAMMiB = 1383  // what the GPU encoder took on the server
	measuredRemoteSeconds  = 2.83  // second PC (RTX 3060 laptop) over ssh, 10 GbE
	measuredSSHOverhead    = 0.5   // the ssh recipe's per-picture cost on Windows (an ssh start per picture)
	measuredCPUSeconds     = 15.27 // local CPU encoder
	measuredCPUThreads     = 8
	pictureUpBytes         = 0.3e6  // a typical picture: 0.1-0.4 MB
	resultDownBytes        = 10.0e6 // the .sve at 1024 tokens: ~10.0 MB
	expertCacheGainGiB     = 1.0    // 5.96 -> 6.96 GiB of expert cache when the encoder left the GPU
	// remoteGPUSeconds is the RTX 3060 laptop's own encode time: the 2.83 s
	// less the ssh start it paid per picture and the 10 GbE transfer (~10 ms).
	remoteGPUSeconds = measuredRemoteSeconds - measuredSSHOverhead
	// cpuParallel is the share of the CPU encoder's work that spreads over
	// threads (Amdahl): 8 -> 16 threads gives 1.8x, not 2x.
	cpuParallel = 0.9
	// The relay's own handling per picture (hashing, writing the .img and
	// .sve files on both sides), and round trips per picture (request with
	// the picture, the reply, the result stream's window).
	relayHandlingSeconds = 0.05
	roundTripsPerPicture = 3
	// Assumed when the link was not measured: 1 Gbit/s, 1 ms.
	assumedBytesPerSec = 117e6
	assumedRTT         = time.Millisecond
	// bigCardMiB: a "24 GB" card reports about 24 000 MiB; the encoder's
	// 1.4 GB is a small share of it. smallCardMiB: at 8 GB or less the
	// encoder would take a sixth of the card.
	bigCardMiB   = 23000
	midCardMiB   = 12288 // 12 GB or less: Strata also shrinks prompt chunks with the encoder on
	smallCardMiB = 8192
	// spareHeadroomMiB: a spare GPU must have the encoder's VRAM free plus this.
	spareHeadroomMiB = 256
)

// RemoteFacts is what the second-PC probe (over ssh) found.
type RemoteFacts struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	// Reason says why it is not reachable (or what limits it), in plain words.
	Reason string `json:"reason,omitempty"`
	GPUs   []GPU  `json:"gpus"`
	// RTT is one round trip over the ssh connection; 0 when not measured.
	RTT time.Duration `json:"rtt_ns"`
	// UpBytesPerSec is this PC to the second PC (the picture goes up);
	// DownBytesPerSec is back (the ~10 MB result comes down); 0 when not
	// measured.
	UpBytesPerSec   float64 `json:"up_bytes_per_sec"`
	DownBytesPerSec float64 `json:"down_bytes_per_sec"`
	// EncoderPresent says strata-vision is already on the second PC.
	EncoderPresent bool `json:"encoder_present"`
}

// Estimate is what one placement would give.
type Estimate struct {
	Placement settings.Placement `json:"placement"`
	// Device is the GPU (nvidia-smi index) the encoder would use: for a
	// spare GPU the `vision.cuda_device` to set, for remote the second PC's
	// GPU; nil for the GPU serving the model and the CPU.
	Device *int `json:"device,omitempty"`
	// Available is false when the placement cannot work here; Basis says why.
	Available bool `json:"available"`
	// PictureSeconds is the expected time per 1024x1024 picture as a client
	// sees it (0 when not available).
	PictureSeconds float64 `json:"picture_seconds"`
	// EncoderVRAMMiB is the VRAM the encoder takes on the GPU that serves
	// the model; FreesMiB is what it leaves there compared with running the
	// encoder on that GPU (it goes to the expert cache).
	EncoderVRAMMiB int `json:"encoder_vram_mib"`
	FreesMiB       int `json:"frees_mib"`
	// Basis says what the figures rest on.
	Basis string `json:"basis"`
	// MeasuredHere: PictureSeconds is the last trial picture measured here
	// (`probe --measure`, the wizard's Measure), not an estimate; Basis
	// says when (RecommendMeasured).
	MeasuredHere bool `json:"measured_here,omitempty"`
}

// Recommendation is where the encoder should run, and why.
type Recommendation struct {
	Placement settings.Placement `json:"placement"`
	// Device is the GPU to run the encoder on (`vision.cuda_device`) when it
	// is not the one serving the model; nil otherwise.
	Device    *int       `json:"device,omitempty"`
	Reason    string     `json:"reason"`
	Estimates []Estimate `json:"estimates"`
	Warnings  []Finding  `json:"warnings"`
}

// Chosen is the estimate of the recommended placement (and device).
func (r Recommendation) Chosen() (Estimate, bool) {
	for _, e := range r.Estimates {
		if e.Placement != r.Placement {
			continue
		}
		if r.Placement == settings.PlacementGPU && (r.Device == nil) != (e.Device == nil) {
			continue
		}
		return e, true
	}
	return Estimate{}, false
}

var (
	rtxRE      = regexp.MustCompile(`RTX\s*(20|30|40|50)(\d0)\b`)
	bigCardsRE = regexp.MustCompile(`\b(A100|H100|H200|B200|L40S?|A6000|6000 ADA|PRO 6000)\b`)
)

// gpuEncodeSeconds estimates the encoder's time per picture on g from the
// nearer of the two measured cards. Big current desktop cards (RTX 3080 and
// up, 4070 and up, data-centre cards) get the RTX 5080's 1.63 s; everything
// else the RTX 3060 laptop's ~2.3 s, the careful figure.
func gpuEncodeSeconds(g GPU) (float64, string) {
	n := strings.ToUpper(g.Name)
	laptop := strings.Contains(n, "LAPTOP") || strings.Contains(n, "MOBILE") || strings.Contains(n, "MAX-Q")
	fast := false
	if m := rtxRE.FindStringSubmatch(n); m != nil && !laptop {
		series, _ := strconv.Atoi(m[1])
		tier, _ := strconv.Atoi(m[2])
		fast = (series >= 40 && tier >= 70) || (series == 30 && tier >= 80)
	} else if !laptop && bigCardsRE.MatchString(n) {
		fast = true
	}
	if fast {
		return measuredGPUSeconds, "1.63 s measured on the reference machine's RTX 5080 (this card is of that class; nothing was measured here)"
	}
	return remoteGPUSeconds, "~2.33 s, from the RTX 3060 laptop GPU measured on the reference machine (2.83 s a picture, of which ~0.5 s went to starting ssh for each picture in that measurement); the careful figure for cards below an RTX 3080 / 4070"
}

func label(g GPU) string { return fmt.Sprintf("GPU %d (%s)", g.Index, displayName(g)) }

func gb(mib int) string { return fmt.Sprintf("%.0f GB", math.Round(float64(mib)/1024)) }

// cpuEstimate scales the measured 15.27 s at 8 threads to the threads
// Strata's CPU encoder uses by default here (half the logical processors).
func cpuEstimate(c CPU) Estimate {
	threads := c.Threads / 2
	note := fmt.Sprintf("Strata's default: half of the %d logical processors", c.Threads)
	if threads < 1 {
		threads = measuredCPUThreads
		note = "the thread count is unknown, so 8 was assumed"
		if c.Threads == 1 {
			threads, note = 1, "one logical processor"
		}
	}
	f := (1 - cpuParallel) + cpuParallel*float64(measuredCPUThreads)/float64(threads)
	return Estimate{Placement: settings.PlacementCPU, Available: true,
		PictureSeconds: round2(measuredCPUSeconds * f), EncoderVRAMMiB: 0, FreesMiB: measuredEncoderVRAMMiB,
		Basis: fmt.Sprintf("an estimate, not measured here: 15.27 s measured with 8 threads on the reference machine's CPU, scaled to %s (%s), assuming 90%% of the work spreads over threads and a similar speed per core", plural(threads, "thread"), note)}
}

// EstimateRemote estimates a picture read on the second PC: its GPU's encode
// time, plus moving ~0.3 MB up and ~10 MB back at the measured link speed,
// plus round trips and the relay's handling.
func EstimateRemote(remote *RemoteFacts) Estimate {
	e := Estimate{Placement: settings.PlacementRemote, FreesMiB: measuredEncoderVRAMMiB}
	if remote == nil {
		e.Basis = "no second PC is known"
		return e
	}
	host := remote.Host
	if host == "" {
		host = settings.PlacementRemote.Name("")
	}
	if !remote.Reachable {
		e.Basis = host + " is not reachable"
		if remote.Reason != "" {
			e.Basis += ": " + remote.Reason
		}
		return e
	}
	var best *GPU
	for i := range remote.GPUs {
		g := &remote.GPUs[i]
		if !Usable(*g) || (g.FreeMiB >= 0 && g.FreeMiB < measuredEncoderVRAMMiB+spareHeadroomMiB) {
			continue
		}
		if best == nil || g.FreeMiB > best.FreeMiB {
			best = g
		}
	}
	if best == nil {
		e.Basis = host + " has no NVIDIA GPU that can run Strata's encoder (RTX 20 or newer, driver 525+, about 1.6 GB free)"
		return e
	}
	enc, encBasis := gpuEncodeSeconds(*best)
	var notes []string
	up, down, rtt := remote.UpBytesPerSec, remote.DownBytesPerSec, remote.RTT
	if up <= 0 {
		up = assumedBytesPerSec
		notes = append(notes, "upload speed not measured, 1 Gbit/s assumed")
	}
	if down <= 0 {
		down = assumedBytesPerSec
		notes = append(notes, "download speed not measured, 1 Gbit/s assumed")
	}
	if rtt <= 0 {
		rtt = assumedRTT
		notes = append(notes, "round trip not measured, 1 ms assumed")
	}
	upS, downS := pictureUpBytes/up, resultDownBytes/down
	rttS := float64(roundTripsPerPicture) * rtt.Seconds()
	e.Available = true
	dev := best.Index // a copy: the caller's RemoteFacts stays its own
	e.Device = &dev
	e.PictureSeconds = round2(enc + upS + downS + rttS + relayHandlingSeconds)
	e.Basis = fmt.Sprintf("encode on %s: %s; + 0.3 MB up at %s (%s) + 10 MB back at %s (%s) + %d round trips of %s + ~0.05 s handling; the relay keeps one ssh connection, so no ssh start per picture (the 2.83 s measured over 10 GbE on the reference machine included ~0.5 s of it)",
		label(*best), encBasis, rate(up), secs(upS), rate(down), secs(downS), roundTripsPerPicture, rtt.Round(10*time.Microsecond))
	if len(notes) > 0 {
		e.Basis += "; " + strings.Join(notes, "; ")
	}
	return e
}

func rate(bps float64) string {
	if bps >= 1e9 {
		return fmt.Sprintf("%.1f GB/s", bps/1e9)
	}
	return fmt.Sprintf("%.0f MB/s", bps/1e6)
}

func secs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// measuredHere puts the trial measured here (m; nil: none) in place of e's
// estimate, as settings.ShownPicture decides.
func measuredHere(e *Estimate, m *settings.Measurement) {
	fig := settings.ShownPicture(e.PictureSeconds, m)
	if !e.Available || fig.Measured == nil {
		return
	}
	e.PictureSeconds, e.MeasuredHere = fig.Seconds, true
	e.Basis = "measured here: " + fig.Measured.Summary()
	if fig.Measured.Device != "" {
		e.Basis += " on " + fig.Measured.Device
	}
}

// Recommend chooses where the encoder should run, from this PC's probe and
// (optionally) the second PC's. The GPU with the most VRAM is taken as the
// one serving the model. The rules, in order:
//   - a spare second GPU (usable, with the encoder's VRAM free): that GPU;
//   - a card of 24 GB or more: this GPU (the encoder's 1.4 GB hardly matters);
//   - a smaller card and a reachable second PC with a usable GPU: remote
//     (frees the 1.4 GB for the expert cache at a modest latency cost);
//   - a card above 8 GB: this GPU; 8 GB or less: the CPU;
//   - no usable GPU: the second PC if reachable, else the CPU (AMD on Linux
//     included), else (AMD on Windows) off.
func Recommend(local *Report, remote *RemoteFacts) Recommendation {
	return RecommendMeasured(local, remote, nil)
}

// RecommendMeasured is Recommend with the trial pictures measured here
// (the settings' last measurements; nil: none): a place measured shows its
// measured figure instead of the estimate (settings.ShownPicture), in its
// estimate and in the reason. The choice itself weighs VRAM as before.
func RecommendMeasured(local *Report, remote *RemoteFacts, measured *settings.Measured) Recommendation {
	m := &settings.Settings{Measured: measured}
	if local == nil {
		local = &Report{}
	}
	rec := Recommendation{Warnings: []Finding{}}

	var usable []GPU
	for _, g := range local.GPUs {
		if Usable(g) {
			usable = append(usable, g)
		}
	}
	var serving *GPU
	for i := range usable {
		if serving == nil || usable[i].TotalMiB > serving.TotalMiB {
			serving = &usable[i]
		}
	}

	// Estimates for every placement, available or not.
	gpuEst := Estimate{Placement: settings.PlacementGPU, EncoderVRAMMiB: measuredEncoderVRAMMiB}
	if serving != nil {
		s, basis := gpuEncodeSeconds(*serving)
		gpuEst.Available, gpuEst.PictureSeconds = true, s
		gpuEst.Basis = fmt.Sprintf("on %s, which serves the model: %s; the encoder takes 1383 MiB there (measured on the reference machine's RTX 5080), about %.0f GiB less expert cache", label(*serving), basis, expertCacheGainGiB)
		measuredHere(&gpuEst, m.LastMeasured(settings.PlacementGPU))
	} else {
		gpuEst.EncoderVRAMMiB = 0
		gpuEst.Basis = "no NVIDIA GPU here can run Strata's encoder (RTX 20 or newer with driver 525+)"
	}
	rec.Estimates = append(rec.Estimates, gpuEst)

	var spare *GPU
	for i := range usable {
		g := &usable[i]
		if g == serving || (g.FreeMiB >= 0 && g.FreeMiB < measuredEncoderVRAMMiB+spareHeadroomMiB) {
			continue
		}
		if spare == nil || g.FreeMiB > spare.FreeMiB {
			spare = g
		}
	}
	var spareEst Estimate
	if spare != nil {
		s, basis := gpuEncodeSeconds(*spare)
		dev := spare.Index
		spareEst = Estimate{Placement: settings.PlacementGPU, Device: &dev, Available: true, PictureSeconds: s,
			EncoderVRAMMiB: 0, FreesMiB: measuredEncoderVRAMMiB,
			Basis: fmt.Sprintf("on the spare %s (vision.cuda_device %d): %s; it takes 1383 MiB there and none on %s", label(*spare), spare.Index, basis, label(*serving))}
		rec.Estimates = append(rec.Estimates, spareEst)
	}

	cpuEst := cpuEstimate(local.CPU)
	hasAMD := false
	for _, g := range local.GPUs {
		if g.Vendor == VendorAMD {
			hasAMD = true
		}
	}
	if local.OS == "windows" && hasAMD && serving == nil {
		cpuEst = Estimate{Placement: settings.PlacementCPU, Basis: "with an AMD card on Windows, Strata's HIP build does not run the image encoder"}
	} else {
		measuredHere(&cpuEst, m.LastMeasured(settings.PlacementCPU))
	}
	rec.Estimates = append(rec.Estimates, cpuEst)

	var remEst Estimate
	if remote != nil {
		remEst = EstimateRemote(remote)
		if rm := m.LastMeasured(settings.PlacementRemote); remEst.Available && rm != nil && (rm.Host == "" || rm.Host == remote.Host) {
			measuredHere(&remEst, rm)
		}
		rec.Estimates = append(rec.Estimates, remEst)
		rec.Warnings = append(rec.Warnings, remoteWarnings(remote)...)
	}
	remoteOK := remote != nil && remEst.Available
	if serving == nil {
		// Nothing to free: no GPU here would hold the encoder.
		for i := range rec.Estimates {
			rec.Estimates[i].FreesMiB = 0
		}
	}

	vs := func(a, b Estimate) string {
		return fmt.Sprintf("%s per picture against %s", secsShort(a), strings.TrimPrefix(secsShort(b), "about "))
	}
	freed := fmt.Sprintf("frees %d MiB of VRAM on %%s for the expert cache (about +%.0f GiB: 3112 -> 3641 experts measured on the reference machine's 16 GB RTX 5080)", measuredEncoderVRAMMiB, expertCacheGainGiB)

	switch {
	case spare != nil:
		dev := spare.Index
		rec.Placement, rec.Device = settings.PlacementGPU, &dev
		rec.Reason = fmt.Sprintf("%s is a spare: reading pictures there (vision.cuda_device %d) leaves all of %s to the model, %d MiB more for its expert cache (about +%.0f GiB), at GPU speed (about %s per picture)",
			label(*spare), spare.Index, label(*serving), measuredEncoderVRAMMiB, expertCacheGainGiB, Seconds(spareEst.PictureSeconds))
	case serving != nil && serving.TotalMiB >= bigCardMiB:
		rec.Placement = settings.PlacementGPU
		rec.Reason = fmt.Sprintf("%s has %s: the encoder's 1.4 GB is a small share of it, and pictures take %s there (%s on the CPU)",
			label(*serving), gb(serving.TotalMiB), secsShort(gpuEst), secsShort(cpuEst))
	case serving != nil && remoteOK:
		rec.Placement = settings.PlacementRemote
		rec.Reason = fmt.Sprintf("%s has %s: reading pictures on %s %s, at %s on this GPU",
			label(*serving), memWords(*serving), hostWord(remote), fmt.Sprintf(freed, settings.PlacementGPU.ShortName("")), vs(remEst, gpuEst))
	case serving != nil && serving.TotalMiB >= 0 && serving.TotalMiB <= smallCardMiB && cpuEst.Available:
		rec.Placement = settings.PlacementCPU
		rec.Reason = fmt.Sprintf("%s has only %s: the encoder's 1.4 GB would take a large share of it, so pictures are read on the CPU (%s); a second PC with an NVIDIA card would be faster",
			label(*serving), gb(serving.TotalMiB), secsShort(cpuEst))
	case serving != nil:
		rec.Placement = settings.PlacementGPU
		rec.Reason = fmt.Sprintf("%s has %s and no second PC is available: pictures are read on this GPU (%s, against %s on the CPU), which costs 1383 MiB of VRAM; a second PC would give that back",
			label(*serving), memWords(*serving), secsShort(gpuEst), secsShort(cpuEst))
		if serving.TotalMiB >= 0 && serving.TotalMiB <= midCardMiB {
			rec.Warnings = append(rec.Warnings, Finding{SeverityWarning,
				fmt.Sprintf("%s has %s: with the encoder on it, Strata also shrinks prompt chunks", label(*serving), gb(serving.TotalMiB)),
				"set --vram-reserve-mib 1000 (setup suggests it), or read pictures on a second PC"})
		}
	case remoteOK:
		rec.Placement = settings.PlacementRemote
		rec.Reason = fmt.Sprintf("no GPU here can run Strata's encoder: %s reads pictures in %s (the CPU: %s)", hostWord(remote), secsShort(remEst), secsShort(cpuEst))
	case cpuEst.Available:
		rec.Placement = settings.PlacementCPU
		why := "no NVIDIA GPU here can run Strata's encoder"
		if hasNvidiaSMIGPU(local.GPUs) {
			why = "the NVIDIA GPUs here cannot run Strata's encoder as they are (card or driver too old: see the findings)"
		}
		if hasAMD && local.OS == "linux" {
			why = "with an AMD card on Linux, Strata's encoder runs on the CPU"
		}
		rec.Reason = fmt.Sprintf("%s: pictures are read on the CPU, about %s each (estimated from the reference machine)", why, Seconds(cpuEst.PictureSeconds))
		if cpuEst.MeasuredHere {
			rec.Reason = fmt.Sprintf("%s: pictures are read on the CPU, %s each as measured here", why, settings.Secs(cpuEst.PictureSeconds))
		}
	default:
		rec.Placement = settings.PlacementOff
		rec.Reason = "with an AMD card on Windows, Strata cannot run its image encoder on this PC: pair a second PC with an NVIDIA card to read pictures"
	}

	// Local requirement failures that decide what is possible (a MIG card
	// is not used as a whole card).
	for _, f := range local.Problems {
		if (f.Severity == SeverityError && (strings.Contains(f.What, "older than Strata supports") || strings.Contains(f.What, "too old for Strata"))) ||
			strings.Contains(f.What, "split into MIG slices") {
			rec.Warnings = append(rec.Warnings, f)
		}
	}
	if rec.Placement == settings.PlacementRemote && !remote.EncoderPresent {
		rec.Warnings = append(rec.Warnings, Finding{SeverityInfo,
			"strata-vision is not on " + hostWord(remote) + " yet",
			"setup copies the encoder, the mmproj and the vocabulary stub (about 11 MB besides the mmproj) there"})
	}
	return rec
}

func remoteWarnings(r *RemoteFacts) []Finding {
	host := hostWord(r)
	if !r.Reachable {
		reason := r.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return []Finding{{SeverityWarning, host + " is not reachable: " + reason,
			"check that it is on and reachable over ssh, then probe it again; until then pictures are read here"}}
	}
	var out []Finding
	for _, f := range CheckRequirements(r.GPUs) {
		f.What = "on " + host + ": " + f.What
		out = append(out, f)
	}
	return out
}

func hostWord(r *RemoteFacts) string {
	if r == nil {
		return settings.PlacementRemote.Name("")
	}
	return settings.PlacementRemote.Name(r.Host)
}

func memWords(g GPU) string {
	if g.TotalMiB < 0 {
		return "an unknown amount of VRAM"
	}
	return gb(g.TotalMiB)
}

// secsShort is an estimate's time in a reason: "about 1.6 s", "0.78 s
// measured here", "not possible".
func secsShort(e Estimate) string {
	if !e.Available {
		return "not possible"
	}
	if e.MeasuredHere {
		return settings.Secs(e.PictureSeconds) + " measured here"
	}
	return "about " + Seconds(e.PictureSeconds)
}

// Seconds writes an estimated picture time for people, the same way
// everywhere it is shown (settings.RoughSecs): "1.6 s", "0.8 s", and whole
// seconds from 10 s on ("111 s").
func Seconds(s float64) string { return settings.RoughSecs(s) }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func hasNvidiaSMIGPU(gs []GPU) bool {
	for _, g := range gs {
		if g.Source == SourceNvidiaSMI {
			return true
		}
	}
	return false
}
