// Package loglines recognises the lines the Strata server prints on its
// stdout and the lines its engine, its encoder and the companion's relay
// append to the engine log (see docs/strata.md, "Logs"), and turns each into
// a typed events.Event. It holds no state: the supervisor decides what to
// publish and the state folder decides what it means.
//
// The recognisers match on the words Strata prints, not on exact spacing or
// a leading timestamp, so a log prefix or a slightly different number format
// does not hide a line. Anything not recognised gives ok == false, except a
// `[strata] ...` line on stdout, which becomes a ServerProgress event (useful
// while the server starts: it shows what it is doing).
package loglines

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/events"
)

// Source says where a line came from.
type Source int

const (
	// Stdout is the server's own output (stdout or stderr of serve/server.py).
	Stdout Source = iota
	// EngineLog is the file named by the config's `log` key: the engine's and
	// the encoder's stderr, and the relay's event lines.
	EngineLog
)

func (s Source) String() string {
	if s == EngineLog {
		return "engine-log"
	}
	return "stdout"
}

// ModelUnloaded is Strata's "model unloaded after N s idle" (lazy load /
// idle_unload_s): events.ModelUnloaded. Details: idle_s.
const ModelUnloaded = events.ModelUnloaded

var (
	// ready: http://127.0.0.1:8080/v1  (OpenAI: ..., context 32768 tokens, images on, API key required)
	reReady      = regexp.MustCompile(`(?:^|\s)ready:\s+(https?://\S+)(?:\s+\((.*)\))?`)
	reReadyCtx   = regexp.MustCompile(`context\s+([0-9][0-9,_]*)\s+tokens`)
	reReadyPort  = regexp.MustCompile(`^https?://[^/]*:(\d+)`)
	reCacheFill  = regexp.MustCompile(`filling the GPU'?s expert cache\s*\(\s*([0-9][0-9,]*)\s+experts?,\s*([0-9.]+)\s*GiB`)
	reCacheGen   = regexp.MustCompile(`strata generate: expert cache\s+([0-9][0-9,]*)\s+slots?,\s*([0-9.]+)\s*GiB`)
	reEngStopped = regexp.MustCompile(`the engine had stopped(?:\s*\(exit code\s*(-?\d+)\))?`)
	reUnloaded   = regexp.MustCompile(`model unloaded after\s+([0-9.]+)\s*s\s+idle`)
	reWarmed     = regexp.MustCompile(`strata-vision: warmed up at\s+(\d+)\s+image tokens`)
	reCPU        = regexp.MustCompile(`strata-vision: on the CPU,\s*(\d+)\s+threads`)
	reHotWake    = regexp.MustCompile(`vision hot:\s*shrink\s+(\d+)\s*ms,\s*start\s+(\d+)\s*ms,\s*encode\s+(\d+)\s*ms`)
	reHotStop    = regexp.MustCompile(`vision hot:\s*encoder stopped after\s+([0-9.]+)\s*s without images(?:\s*\(stop\s+(\d+)\s*ms,\s*grow\s+(\d+)\s*ms\))?`)
	// fork: [strata] the vision encoder did not start (...); serving text only, an image will ask for it again
	reEncForkFail = regexp.MustCompile(`the vision encoder did not start\s*\((.*)\);\s*serving text only`)
	// main: the vision encoder did not start: <first line the encoder printed>
	reEncMainFail = regexp.MustCompile(`the vision encoder did not start:\s*(.*)$`)
	rePortInUse   = regexp.MustCompile(`(?i)(port\b.*\b(already )?in use|address already in use|only one usage of each socket address|EADDRINUSE|errno 98\b|errno 10048\b)`)
)

// Parse turns one line of Strata's from src into an event.
func Parse(src Source, line string) (events.Event, bool) {
	line = strings.TrimRight(line, "\r\n")
	// The relay reports to the service over the control API, never in
	// this log: a line here that looks like one of its events is only
	// words someone wrote (the log's owner included), not a report.
	// Most output lines are request logs: leave them before the regexps.
	if !strings.Contains(line, "ready:") && !strings.Contains(line, "strata") &&
		!strings.Contains(line, "vision") && !strings.Contains(line, "engine") &&
		!strings.Contains(line, "model unloaded") {
		return events.Event{}, false
	}
	from := events.Source{Source: src.String()}
	ev := func(msg string, d events.Payload) (events.Event, bool) { return events.New(msg, d), true }

	if m := reReady.FindStringSubmatch(line); m != nil && src == Stdout {
		d := events.ServerReadyDetails{Source: from, URL: m[1]}
		if p := reReadyPort.FindStringSubmatch(m[1]); p != nil {
			d.Port = atoi(p[1])
		}
		yes, no := true, false
		if tail := m[2]; tail != "" {
			if c := reReadyCtx.FindStringSubmatch(tail); c != nil {
				d.Context = atoi(c[1])
			}
			low := strings.ToLower(tail)
			switch {
			case strings.Contains(low, "images on"):
				d.Images = &yes
			case strings.Contains(low, "images off"), strings.Contains(low, "no images"):
				d.Images = &no
			}
			switch {
			case strings.Contains(low, "no api key"), strings.Contains(low, "api key not required"):
				d.APIKey = &no
			case strings.Contains(low, "api key required"):
				d.APIKey = &yes
			}
		}
		return ev("the server is ready at "+m[1], d)
	}
	if m := reCacheFill.FindStringSubmatch(line); m != nil {
		return cacheEvent(from, m[1], m[2], "filling the GPU's expert cache"), true
	}
	if m := reCacheGen.FindStringSubmatch(line); m != nil {
		return cacheEvent(from, m[1], m[2], "expert cache"), true
	}
	if m := reHotWake.FindStringSubmatch(line); m != nil {
		s, st, e := atoi(m[1]), atoi(m[2]), atoi(m[3])
		return ev("the vision encoder woke for a picture", events.EncoderWokeDetails{Source: from, ShrinkMS: int64(s), StartMS: int64(st), EncodeMS: int64(e), WakeMS: int64(s + st)})
	}
	if m := reHotStop.FindStringSubmatch(line); m != nil {
		d := events.EncoderIdleStoppedDetails{Source: from, IdleS: atof(m[1])}
		if m[2] != "" {
			d.StopMS, d.GrowMS = int64(atoi(m[2])), int64(atoi(m[3]))
		}
		return ev("the vision encoder stopped after "+m[1]+" s without pictures", d)
	}
	if m := reEncForkFail.FindStringSubmatch(line); m != nil {
		return ev("the vision encoder did not start ("+m[1]+"); Strata serves text only and tries again on the next picture", events.EncoderFailedDetails{Source: from, Reason: m[1]})
	}
	if m := reEncMainFail.FindStringSubmatch(line); m != nil {
		return ev("the vision encoder did not start: "+m[1], events.EncoderFailedDetails{Source: from, Reason: m[1], Fatal: true})
	}
	if m := reWarmed.FindStringSubmatch(line); m != nil {
		on := true
		return ev("the vision encoder warmed up on the GPU", events.EncoderReadyDetails{Source: from, OnGPU: &on, MaxTokens: atoi(m[1])})
	}
	if m := reCPU.FindStringSubmatch(line); m != nil {
		off := false
		return ev("the vision encoder runs on the CPU", events.EncoderReadyDetails{Source: from, OnGPU: &off, Threads: atoi(m[1])})
	}
	if strings.Contains(line, "starting the vision encoder") {
		return ev("starting the vision encoder", events.EncoderStartingDetails{Source: from, Phase: "starting"})
	}
	if strings.Contains(line, "loading the vision encoder") {
		return ev("loading the vision encoder", events.EncoderStartingDetails{Source: from, Phase: "loading"})
	}
	if m := reEngStopped.FindStringSubmatch(line); m != nil {
		d := events.EngineRestartedDetails{Source: from}
		msg := "the engine had stopped; Strata is starting it again"
		if m[1] != "" {
			d.ExitCode = atoi(m[1])
			msg = "the engine had stopped (exit code " + m[1] + "); Strata is starting it again"
		}
		return ev(msg, d)
	}
	if strings.Contains(line, "the engine is running again") {
		return ev("the engine is running again", events.EngineRestartedDetails{Source: from, EngineRunning: true})
	}
	if m := reUnloaded.FindStringSubmatch(line); m != nil {
		return ev("the model was unloaded after "+m[1]+" s idle", events.ModelUnloadedDetails{Source: from, IdleS: atof(m[1])})
	}
	if src == Stdout {
		if i := strings.Index(line, "[strata]"); i >= 0 {
			msg := strings.TrimSpace(line[i+len("[strata]"):])
			msg = strings.TrimSpace(strings.TrimSuffix(msg, "..."))
			if msg != "" {
				return ev(msg, events.ServerProgressDetails{Source: from})
			}
		}
	}
	return events.Event{}, false
}

// IsPortInUse reports whether line is the server's (or Python's) complaint
// that its port is taken. The supervisor then stops instead of restarting:
// another start would meet the same port.
func IsPortInUse(line string) bool {
	l := strings.ToLower(line)
	if !strings.Contains(l, "in use") && !strings.Contains(l, "eaddrinuse") &&
		!strings.Contains(l, "errno 98") && !strings.Contains(l, "errno 10048") &&
		!strings.Contains(l, "only one usage") {
		return false
	}
	return rePortInUse.MatchString(line)
}

func cacheEvent(from events.Source, experts, gib, what string) events.Event {
	n := atoi(experts)
	g := atof(gib)
	return events.New(what+": "+strconv.Itoa(n)+" experts, "+strconv.FormatFloat(g, 'f', 2, 64)+" GiB of VRAM",
		events.ExpertCacheDetails{Source: from, Experts: n, GiB: g})
}

func atoi(s string) int {
	s = strings.NewReplacer(",", "", "_", "").Replace(s)
	n, _ := strconv.Atoi(s)
	return n
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
