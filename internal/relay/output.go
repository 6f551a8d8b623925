package relay

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
)

// output is what the relay says, from any of its goroutines: lines for a
// developer (Options.Log, never Strata's log), events for the service
// (Options.Report), notes for a person (Options.Notes), and the n_embd the
// second PC reported (Options.ReportNEmbd). It remembers what it said, so
// each note, degraded encoder and n_embd is said once. Its one mutex guards
// the log writer and that memory.
type output struct {
	log         io.Writer
	report      func(events.Event) // must not block; nil: dropped
	notes       func(string)       // nil: dropped
	reportNEmbd func(int)          // must not block; nil: not reported
	nEmbd       int                // what READY said

	mu            sync.Mutex
	noted         map[string]bool          // notes handed on (firstNote)
	lastWhere     map[string]framing.Where // per place ("remote", "local_cpu"): the last start line seen
	reportedNEmbd int
}

// relayMark names this relay process in every event it reports (its pid),
// so the service folds what the current relay saw, not what an earlier one
// did. Every payload the relay sends embeds it.
var relayMark = events.RelayMark{Relay: os.Getpid()}

// logf writes a line for a developer (Options.Log), never to Strata's log.
func (o *output) logf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.log, "vision relay: "+format+"\n", args...)
}

// emit hands an event to the service (Options.Report), without waiting. d
// carries relayMark (set by the caller: a typed field of every relay
// payload).
func (o *output) emit(msg string, d events.Payload) {
	e := events.New(msg, d)
	e.Time = time.Now()
	if o.report != nil {
		o.report(e)
	}
}

// firstNote: line was not noted before by this relay (the second PC's
// notes repeat at each agent session).
func (o *output) firstNote(line string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.noted == nil {
		o.noted = map[string]bool{}
	}
	if o.noted[line] {
		return false
	}
	o.noted[line] = true
	return true
}

// note hands a line for a person to Options.Notes.
func (o *output) note(line string) {
	if o.notes != nil {
		o.notes(line)
	}
}

// noteNEmbd records an n_embd the agent reported.
func (o *output) noteNEmbd(n int) {
	if n <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if n != o.nEmbd && o.nEmbd != 0 {
		o.emit(fmt.Sprintf("READY said n_embd %d but the second PC's encoder reports %d; restart Strata so it uses %d", o.nEmbd, n, n),
			events.EncoderFailedDetails{RelayMark: relayMark, Where: events.WhereRemote, NEmbd: n})
	}
	if n == o.reportedNEmbd || o.reportNEmbd == nil {
		return
	}
	// The service records it in the settings: the relay never writes them.
	o.reportNEmbd(n)
	o.reportedNEmbd = n
}

// reportWhere sends vision.ready for an encoder that just started at place
// ("remote", "local_cpu", "fallback_cpu"): where it really reads pictures,
// from its own start line. An encoder on a CPU where a GPU was expected is
// degraded: vision.degraded, once until that changes.
func (o *output) reportWhere(place, host string, startMS int64, w *framing.Where, args []string) {
	details := events.EncoderReadyDetails{RelayMark: relayMark, StartMS: startMS, Where: place, Host: host, Args: strings.Join(args, " ")}
	if w != nil {
		details.Device, details.GPU, details.Threads, details.Tokens, details.ExpectedDevice = w.Device, w.GPU, w.Threads, w.Tokens, w.Expected
		if v, ok := w.VRAM(); ok {
			details.VRAMMiB = &v // 0 included: a figure, not an unknown
		}
	}
	o.emit("", details)
	o.mu.Lock()
	if o.lastWhere == nil {
		o.lastWhere = map[string]framing.Where{}
	}
	prev, seen := o.lastWhere[place]
	if w != nil {
		o.lastWhere[place] = *w
	}
	o.mu.Unlock()
	if w.Degraded() && !(seen && prev.Degraded()) {
		why := w.Reason
		if why == "" {
			why = "its start line says so"
		}
		msg := fmt.Sprintf("pictures are read on the second PC's CPU, not its GPU (%s); they take several times longer", why)
		o.emit(msg, events.EncoderDegradedDetails{RelayMark: relayMark, Where: place, Host: host, Device: w.Device, ExpectedDevice: w.Expected, Reason: why})
	}
}

// noteWriter passes an encoder's stderr lines that are the relay's own
// notes ("vision relay: ...": an argument it dropped) to note, and nothing
// else: the encoder's own stderr stays out of Strata's engine log.
func noteWriter(note func(string)) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, l := range strings.Split(string(p), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "vision relay: "); ok {
				note(rest)
			}
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
