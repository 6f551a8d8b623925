// Package events defines the companion's typed events and a bus that numbers
// them, keeps the recent ones, and lets a client that reconnects ask for
// everything after the last sequence number it saw (as Syncthing's event API
// does), so nothing is missed.
package events

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Kind is an event's type. The dotted prefix groups them.
type Kind string

const (
	ServerStarting   Kind = "server.starting"   // the supervisor launched the server; Details: pid
	ServerProgress   Kind = "server.progress"   // a start phase (filling the expert cache, loading the encoder...)
	ServerReady      Kind = "server.ready"      // the `ready:` line or /health answered; Details: url, model, context
	ServerExited     Kind = "server.exited"     // the process ended; Details: code, expected, last_lines
	ServerRestarting Kind = "server.restarting" // a restart after an exit; Details: attempt, delay_s
	ServerFailed     Kind = "server.failed"     // given up (crash loop, port in use, missing files); Message says why
	ServerStopped    Kind = "server.stopped"    // stopped on request

	// ModelUnloaded: Strata unloaded its model (its "model unloaded after N
	// s idle" line, or /health saying loaded false after POST /v1/unload),
	// ending its engine and its encoder; Details: idle_s (the line's),
	// source. ModelLoaded: /health says loaded again after an unload (the
	// next request loaded both).
	ModelUnloaded Kind = "server.model_unloaded"
	ModelLoaded   Kind = "server.model_loaded"

	EngineRestarted Kind = "engine.restarted"    // Strata restarted its engine by itself
	ExpertCache     Kind = "engine.expert_cache" // Details: experts, gib

	EncoderStarting    Kind = "vision.starting"     // the server is starting its encoder
	EncoderReady       Kind = "vision.ready"        // the encoder warmed up / is available; from the relay: where, host, start_ms, device, gpu, vram_mib, threads, tokens, expected, args
	EncoderWoke        Kind = "vision.woke"         // elastic/remote encoder woke; Details: start_ms, encode_ms, ...
	EncoderIdleStopped Kind = "vision.idle_stopped" // stopped after idle; Details: idle_s
	EncoderFailed      Kind = "vision.failed"       // did not start or stopped; Message says why
	// PictureEncoded: one picture's outcome, every picture, OK or not.
	// Details: ok, where (remote, fallback_cpu, local_cpu, off, none), ms
	// (to the reply), host (the second PC), and encode_ms, tokens (ok) or
	// error (the ERR's reason; also the Message).
	PictureEncoded Kind = "vision.picture"
	// EncoderDegraded: an encoder reads on a CPU where a GPU was expected
	// (its own start line says so); Message: why, in words; Details: where,
	// host, device, expected, reason. Sent once until that changes.
	EncoderDegraded Kind = "vision.degraded"
	// VisionFallback: the second PC could not be reached and pictures are
	// read on this PC's CPU (sent once per outage). Message: why.
	VisionFallback Kind = "vision.fallback"
	// RemoteWake: a Wake-on-LAN packet was sent; Details: host, mac,
	// broadcast, port, wait_s; then ok and woke_ms once it answered or not.
	RemoteWake Kind = "remote.wake"

	RemoteConnected    Kind = "remote.connected"    // relay has an ssh connection; Details: host, rtt_ms
	RemoteDisconnected Kind = "remote.disconnected" // relay lost it; Message: reason
	RemoteReachable    Kind = "remote.reachable"    // the second PC answers
	RemoteUnreachable  Kind = "remote.unreachable"  // it does not; Message: reason

	ConfigChanged Kind = "config.changed" // Details: path, placement, backup
	// ConfigSwitched: the service runs another config (stopped, switched,
	// started); Details: previous, running, strata_root, diff.
	ConfigSwitched Kind = "config.switched"
	// ConfigRewritten: the config in use was rewritten by someone else
	// (Strata's setup): Details: path, findings (what was replaced or dropped).
	ConfigRewritten Kind = "config.rewritten"
	// SettingsChanged: the companion's settings were saved (a change that
	// touches no Strata config: fallback, notifications, idle stop...);
	// Details: path.
	SettingsChanged Kind = "settings.changed"

	// ServerForeign: a Strata server the service did not start holds the
	// port; Details: port, pid, cmdline.
	ServerForeign Kind = "server.foreign"

	// Strata's own update run by the service (update-strata).
	UpdateStarted  Kind = "update.started"  // Details: from (engine version)
	UpdateProgress Kind = "update.progress" // one line of its output; Message: the line
	UpdateFinished Kind = "update.finished" // Details: from, to, ok
	UpdateFailed   Kind = "update.failed"   // Message says what failed; Details: from, rolled_back
)

// Where a picture was read: the "where" of vision.picture, vision.ready
// and vision.degraded (sent by the relay).
const (
	WhereRemote      = "remote"       // the second PC
	WhereFallbackCPU = "fallback_cpu" // this PC's CPU, because the second PC could not be reached
	WhereLocalCPU    = "local_cpu"    // this PC's CPU, because the settings say so
	WhereOff         = "off"          // nowhere: pictures are switched off
	WhereNone        = "none"         // nowhere: refused before it went anywhere
)

// ServerLogDropped: captured server output lines could not be written to the
// log file (a full disk); Details: dropped (the total so far), file, writing
// (false while lines are being dropped, true once writing works again).
const ServerLogDropped Kind = "server.log_dropped"

// Event is one thing that happened.
type Event struct {
	Seq     uint64         `json:"seq"`
	Time    time.Time      `json:"time"`
	Kind    Kind           `json:"kind"`
	Message string         `json:"message,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Bus numbers events and keeps the last Capacity of them.
type Bus struct {
	mu       sync.Mutex
	capacity int
	buf      []Event
	next     uint64
	changed  chan struct{} // closed and replaced on every publish
	now      func() time.Time
	blocking func() // SetBlockingHook's; nil outside tests
}

// SetBlockingHook makes f run each time a Wait has found nothing new and is
// about to block (outside the bus's lock, so f may Publish). It is for tests
// of what waits on the bus: with it a test knows a waiter is blocked, and
// can publish from inside the wait, instead of sleeping and hoping.
func (b *Bus) SetBlockingHook(f func()) {
	b.mu.Lock()
	b.blocking = f
	b.mu.Unlock()
}

// NewBus keeps the last capacity events (at least 1).
func NewBus(capacity int) *Bus {
	if capacity < 1 {
		capacity = 1
	}
	return &Bus{capacity: capacity, next: 1, changed: make(chan struct{}), now: time.Now}
}

// Publish stamps e with the next sequence number (and the time, if unset) and
// wakes every waiter. It returns the stamped event.
func (b *Bus) Publish(e Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.Seq = b.next
	b.next++
	if e.Time.IsZero() {
		e.Time = b.now()
	}
	b.buf = append(b.buf, e)
	// Drop the oldest events in batches (when twice the capacity is held) so
	// a publish costs amortised O(1) instead of copying the buffer each time.
	if len(b.buf) >= 2*b.capacity {
		b.buf = append(b.buf[:0:0], b.buf[len(b.buf)-b.capacity:]...)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	return e
}

// Last returns the sequence number of the newest event (0 if none).
func (b *Bus) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next - 1
}

// Since returns the kept events with Seq > since, oldest first. gap is true
// when events after since were already dropped from the buffer (the client
// should re-read the whole state).
func (b *Bus) Since(since uint64) (evs []Event, gap bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sinceLocked(since)
}

func (b *Bus) sinceLocked(since uint64) ([]Event, bool) {
	kept := b.buf
	if len(kept) > b.capacity {
		kept = kept[len(kept)-b.capacity:]
	}
	// Seqs are consecutive, so the first wanted event is found by arithmetic.
	var out []Event
	if len(kept) > 0 {
		first := kept[0].Seq
		i := 0
		if since >= first {
			i = int(since - first + 1)
		}
		if i < len(kept) {
			out = append(out, kept[i:]...)
		}
	}
	gap := len(kept) > 0 && kept[0].Seq > since+1
	return out, gap
}

// Wait returns the events after since, waiting until there is at least one or
// ctx ends (then it returns what there is, possibly none, and ctx's error).
func (b *Bus) Wait(ctx context.Context, since uint64) ([]Event, bool, error) {
	for {
		b.mu.Lock()
		evs, gap := b.sinceLocked(since)
		ch, hook := b.changed, b.blocking
		b.mu.Unlock()
		if len(evs) > 0 {
			return evs, gap, nil
		}
		if hook != nil {
			hook()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// LinePrefix starts a line by which a process the companion does not
// supervise directly (the relay, whose stderr Strata appends to its engine
// log) reports an event; the service follows that log and picks them up.
const LinePrefix = "strata-companion-event: "

// FormatLine renders e as one log line with LinePrefix (Seq is not sent).
func FormatLine(e Event) string {
	e.Seq = 0
	b, _ := json.Marshal(e)
	return LinePrefix + string(b)
}

// ParseLine reads a line written by FormatLine; ok is false for any other line.
func ParseLine(line string) (e Event, ok bool) {
	i := strings.Index(line, LinePrefix)
	if i < 0 {
		return Event{}, false
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line[i+len(LinePrefix):])), &e); err != nil || e.Kind == "" {
		return Event{}, false
	}
	return e, true
}
