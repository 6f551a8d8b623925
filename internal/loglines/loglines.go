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

// Parse turns one line from src into an event. Relay event lines
// (events.LinePrefix) are recognised from either source, and only the
// relay's own kinds, bounded (events.BoundRelay).
func Parse(src Source, line string) (events.Event, bool) {
	line = strings.TrimRight(line, "\r\n")
	if strings.Contains(line, events.LinePrefix) {
		// Only the relay writes such lines: only its kinds, bounded.
		if e, ok := events.ParseLine(line); ok {
			if e, err := events.BoundRelay(e); err == nil {
				return e, true
			}
		}
		return events.Event{}, false
	}
	// Most output lines are request logs: leave them before the regexps.
	if !strings.Contains(line, "ready:") && !strings.Contains(line, "strata") &&
		!strings.Contains(line, "vision") && !strings.Contains(line, "engine") &&
		!strings.Contains(line, "model unloaded") {
		return events.Event{}, false
	}
	details := func(kv ...any) map[string]any {
		m := map[string]any{"source": src.String()}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	if m := reReady.FindStringSubmatch(line); m != nil && src == Stdout {
		d := details("url", m[1])
		if p := reReadyPort.FindStringSubmatch(m[1]); p != nil {
			d["port"] = atoi(p[1])
		}
		if tail := m[2]; tail != "" {
			if c := reReadyCtx.FindStringSubmatch(tail); c != nil {
				d["context"] = atoi(c[1])
			}
			low := strings.ToLower(tail)
			switch {
			case strings.Contains(low, "images on"):
				d["images"] = true
			case strings.Contains(low, "images off"), strings.Contains(low, "no images"):
				d["images"] = false
			}
			switch {
			case strings.Contains(low, "no api key"), strings.Contains(low, "api key not required"):
				d["api_key"] = false
			case strings.Contains(low, "api key required"):
				d["api_key"] = true
			}
		}
		return events.Event{Kind: events.ServerReady, Message: "the server is ready at " + m[1], Details: d}, true
	}
	if m := reCacheFill.FindStringSubmatch(line); m != nil {
		return cacheEvent(details, m[1], m[2], "filling the GPU's expert cache"), true
	}
	if m := reCacheGen.FindStringSubmatch(line); m != nil {
		return cacheEvent(details, m[1], m[2], "expert cache"), true
	}
	if m := reHotWake.FindStringSubmatch(line); m != nil {
		s, st, e := atoi(m[1]), atoi(m[2]), atoi(m[3])
		return events.Event{Kind: events.EncoderWoke,
			Message: "the vision encoder woke for a picture",
			Details: details("shrink_ms", s, "start_ms", st, "encode_ms", e, "wake_ms", s+st)}, true
	}
	if m := reHotStop.FindStringSubmatch(line); m != nil {
		d := details("idle_s", atof(m[1]))
		if m[2] != "" {
			d["stop_ms"] = atoi(m[2])
			d["grow_ms"] = atoi(m[3])
		}
		return events.Event{Kind: events.EncoderIdleStopped,
			Message: "the vision encoder stopped after " + m[1] + " s without pictures", Details: d}, true
	}
	if m := reEncForkFail.FindStringSubmatch(line); m != nil {
		return events.Event{Kind: events.EncoderFailed,
			Message: "the vision encoder did not start (" + m[1] + "); Strata serves text only and tries again on the next picture",
			Details: details("reason", m[1], "fatal", false)}, true
	}
	if m := reEncMainFail.FindStringSubmatch(line); m != nil {
		return events.Event{Kind: events.EncoderFailed,
			Message: "the vision encoder did not start: " + m[1],
			Details: details("reason", m[1], "fatal", true)}, true
	}
	if m := reWarmed.FindStringSubmatch(line); m != nil {
		return events.Event{Kind: events.EncoderReady, Message: "the vision encoder warmed up on the GPU",
			Details: details("gpu", true, "max_tokens", atoi(m[1]))}, true
	}
	if m := reCPU.FindStringSubmatch(line); m != nil {
		return events.Event{Kind: events.EncoderReady, Message: "the vision encoder runs on the CPU",
			Details: details("gpu", false, "threads", atoi(m[1]))}, true
	}
	if strings.Contains(line, "starting the vision encoder") {
		return events.Event{Kind: events.EncoderStarting, Message: "starting the vision encoder", Details: details("phase", "starting")}, true
	}
	if strings.Contains(line, "loading the vision encoder") {
		return events.Event{Kind: events.EncoderStarting, Message: "loading the vision encoder", Details: details("phase", "loading")}, true
	}
	if m := reEngStopped.FindStringSubmatch(line); m != nil {
		d := details("running", false)
		msg := "the engine had stopped; Strata is starting it again"
		if m[1] != "" {
			d["exit_code"] = atoi(m[1])
			msg = "the engine had stopped (exit code " + m[1] + "); Strata is starting it again"
		}
		return events.Event{Kind: events.EngineRestarted, Message: msg, Details: d}, true
	}
	if strings.Contains(line, "the engine is running again") {
		return events.Event{Kind: events.EngineRestarted, Message: "the engine is running again", Details: details("running", true)}, true
	}
	if m := reUnloaded.FindStringSubmatch(line); m != nil {
		return events.Event{Kind: ModelUnloaded, Message: "the model was unloaded after " + m[1] + " s idle",
			Details: details("idle_s", atof(m[1]))}, true
	}
	if src == Stdout {
		if i := strings.Index(line, "[strata]"); i >= 0 {
			msg := strings.TrimSpace(line[i+len("[strata]"):])
			msg = strings.TrimSpace(strings.TrimSuffix(msg, "..."))
			if msg != "" {
				return events.Event{Kind: events.ServerProgress, Message: msg, Details: details()}, true
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

func cacheEvent(details func(...any) map[string]any, experts, gib, what string) events.Event {
	n := atoi(experts)
	g := atof(gib)
	return events.Event{Kind: events.ExpertCache,
		Message: what + ": " + strconv.Itoa(n) + " experts, " + strconv.FormatFloat(g, 'f', 2, 64) + " GiB of VRAM",
		Details: details("experts", n, "gib", g)}
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
