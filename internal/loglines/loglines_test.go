package loglines

import (
	"reflect"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/events"
)

func TestParse(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		src    Source
		line   string
		kind   events.Kind // "" = not recognised
		want   events.Payload
		msgHas string
	}{
		{"ready with everything", Stdout,
			"ready: http://127.0.0.1:8080/v1  (OpenAI: http://127.0.0.1:8080/v1, Anthropic: http://127.0.0.1:8080, context 32768 tokens, images on, API key required)",
			events.ServerReady, events.ServerReadyDetails{URL: "http://127.0.0.1:8080/v1", Port: 8080, Context: 32768, Images: &yes, APIKey: &yes}, "127.0.0.1:8080"},
		{"ready, no images, no key, thousands separator", Stdout,
			"ready: http://127.0.0.1:8095/v1  (OpenAI: ..., context 131,072 tokens, images off, no API key)",
			events.ServerReady, events.ServerReadyDetails{URL: "http://127.0.0.1:8095/v1", Port: 8095, Context: 131072, Images: &no, APIKey: &no}, ""},
		{"ready with a timestamp prefix and no tail", Stdout,
			"12:00:01 ready: http://0.0.0.0:9000/v1",
			events.ServerReady, events.ServerReadyDetails{URL: "http://0.0.0.0:9000/v1", Port: 9000}, ""},
		{"ready in the engine log is not the server", EngineLog,
			"ready: http://127.0.0.1:8080/v1", "", nil, ""},
		{"the word ready inside a sentence", Stdout, "[strata] already: nothing", events.ServerProgress, nil, "already: nothing"},
		{"expert cache fill", Stdout,
			"[strata] filling the GPU's expert cache (3112 experts, 5.96 GiB of VRAM) ...",
			events.ExpertCache, events.ExpertCacheDetails{Experts: 3112, GiB: 5.96}, "3112 experts"},
		{"expert cache in the engine log", EngineLog,
			"strata generate: expert cache 3703 slots, 6.04 GiB of VRAM; policy is lfu-decay",
			events.ExpertCache, events.ExpertCacheDetails{Experts: 3703, GiB: 6.04}, ""},
		{"starting the encoder", Stdout, "[strata] starting the vision encoder ...",
			events.EncoderStarting, events.EncoderStartingDetails{Phase: "starting"}, ""},
		{"loading the encoder", Stdout, "[strata] loading the vision encoder ...",
			events.EncoderStarting, events.EncoderStartingDetails{Phase: "loading"}, ""},
		{"encoder warmed up on the GPU", EngineLog, "strata-vision: warmed up at 1024 image tokens",
			events.EncoderReady, events.EncoderReadyDetails{OnGPU: &yes, MaxTokens: 1024}, ""},
		{"encoder on the CPU", EngineLog, "strata-vision: on the CPU, 8 threads, no warm-up",
			events.EncoderReady, events.EncoderReadyDetails{OnGPU: &no, Threads: 8}, ""},
		{"engine stopped", Stdout, "[strata] the engine had stopped (exit code -11); starting it again ...",
			events.EngineRestarted, events.EngineRestartedDetails{ExitCode: -11}, "exit code -11"},
		{"engine running again", Stdout, "[strata] the engine is running again",
			events.EngineRestarted, events.EngineRestartedDetails{EngineRunning: true}, ""},
		{"model unloaded", Stdout, "[strata] model unloaded after 600 s idle; the next request loads it again",
			ModelUnloaded, events.ModelUnloadedDetails{IdleS: 600}, ""},
		{"fork hot wake", Stdout, "[strata] vision hot: shrink 120 ms, start 850 ms, encode 640 ms",
			events.EncoderWoke, events.EncoderWokeDetails{ShrinkMS: 120, StartMS: 850, EncodeMS: 640, WakeMS: 970}, ""},
		{"fork hot idle stop", Stdout, "[strata] vision hot: encoder stopped after 300 s without images (stop 40 ms, grow 210 ms)",
			events.EncoderIdleStopped, events.EncoderIdleStoppedDetails{IdleS: 300, StopMS: 40, GrowMS: 210}, "300 s"},
		{"main encoder failure", Stdout, "the vision encoder did not start: error: cannot open mmproj.gguf",
			events.EncoderFailed, events.EncoderFailedDetails{Fatal: true, Reason: "error: cannot open mmproj.gguf"}, "cannot open"},
		{"fork encoder failure", Stdout,
			"[strata] the vision encoder did not start (no READY within 300 s); serving text only, an image will ask for it again",
			events.EncoderFailed, events.EncoderFailedDetails{Reason: "no READY within 300 s"}, "text only"},
		{"other strata line is progress", Stdout, "[strata] locking experts into RAM ...",
			events.ServerProgress, nil, "locking experts into RAM"},
		{"other strata line in the engine log is nothing", EngineLog, "[strata] something", "", nil, ""},
		{"unrelated", Stdout, "INFO: 127.0.0.1 - GET /health 200", "", nil, ""},
		{"empty", Stdout, "", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := Parse(tc.src, tc.line)
			if tc.kind == "" {
				if ok {
					t.Fatalf("Parse(%q) = %+v, want nothing", tc.line, e)
				}
				return
			}
			if !ok || e.Kind != tc.kind {
				t.Fatalf("Parse(%q) = %v %+v, want kind %s", tc.line, ok, e, tc.kind)
			}
			if tc.want != nil {
				got := e.Details
				delete(got, "source")
				if want := events.ToMap(tc.want); !reflect.DeepEqual(got, want) {
					t.Errorf("details %#v, want %#v", got, want)
				}
			}
			if tc.msgHas != "" && !strings.Contains(e.Message, tc.msgHas) {
				t.Errorf("message %q does not mention %q", e.Message, tc.msgHas)
			}
		})
	}
}

// Lines in the form an older relay wrote its events in are not events: the
// relay reports to the service, and the engine log is the owner's to write.
func TestRelayLinesInTheLogAreNotEvents(t *testing.T) {
	line := `2026-01-02 03:04:05 strata-companion-event: {"kind":"remote.unreachable","message":"pc2 does not answer","details":{"host":"pc2"}}`
	for _, src := range []Source{EngineLog, Stdout} {
		if e, ok := Parse(src, line); ok {
			t.Errorf("%v: a relay-event line became %+v", src, e)
		}
	}
}

func TestIsPortInUse(t *testing.T) {
	yes := []string{
		"[strata] port 8080 is already in use (is another Strata running?)",
		"OSError: [Errno 98] Address already in use",
		"error: the port 8095 is in use",
		"OSError: [WinError 10048] Only one usage of each socket address (protocol/network address/port) is normally permitted",
	}
	no := []string{
		"[strata] filling the GPU's expert cache (3112 experts, 5.96 GiB of VRAM) ...",
		"ready: http://127.0.0.1:8080/v1  (images on, API key required)",
		"the GPU is in use by another program",
		"",
	}
	for _, l := range yes {
		if !IsPortInUse(l) {
			t.Errorf("IsPortInUse(%q) = false", l)
		}
	}
	for _, l := range no {
		if IsPortInUse(l) {
			t.Errorf("IsPortInUse(%q) = true", l)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"ready: http://127.0.0.1:8080/v1  (OpenAI: ..., context 32768 tokens, images on, API key required)",
		"[strata] filling the GPU's expert cache (3112 experts, 5.96 GiB of VRAM) ...",
		"strata generate: expert cache 3703 slots, 6.04 GiB of VRAM; policy is x",
		"[strata] vision hot: shrink 1 ms, start 2 ms, encode 3 ms",
		"[strata] vision hot: encoder stopped after 3 s without images (stop 1 ms, grow 2 ms)",
		"the vision encoder did not start: x",
		`strata-companion-event: {"kind":"remote.connected"}`,
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, line string, engine bool) {
		src := Stdout
		if engine {
			src = EngineLog
		}
		e, ok := Parse(src, line)
		if ok && e.Kind == "" {
			t.Fatalf("recognised %q without a kind", line)
		}
		if !ok && (e.Kind != "" || e.Message != "") {
			t.Fatalf("unrecognised %q but returned %+v", line, e)
		}
		_ = IsPortInUse(line)
	})
}

// BenchmarkParse is the cost per line of server output (most lines are
// not recognised, which is the common case).
func BenchmarkParse(b *testing.B) {
	lines := []string{
		"INFO:     127.0.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
		"[strata] filling the GPU's expert cache (3112 experts, 5.96 GiB of VRAM) ...",
		"ready: http://127.0.0.1:8080/v1  (OpenAI: ..., context 32768 tokens, images on, API key required)",
		"prompt eval: 2048 tokens in 1.2 s",
	}
	for i := 0; i < b.N; i++ {
		Parse(Stdout, lines[i%len(lines)])
	}
}
