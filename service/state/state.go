// Package state folds the service's events into one controlapi.State. The
// Tracker is the single publisher of the service: it numbers an event on the
// bus and folds it into the state under one lock, so a client that reads the
// state (Seq = N) and then asks for events after N misses nothing and sees
// nothing twice.
package state

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// Tracker publishes events and keeps the state they add up to.
type Tracker struct {
	mu  sync.Mutex
	bus *events.Bus
	st  controlapi.State
	// OnEvent, when set, sees every event after it is folded (logging).
	OnEvent func(events.Event)
}

// New starts from initial (service info, config, vision placement) and
// publishes on bus.
func New(bus *events.Bus, initial controlapi.State) *Tracker {
	if initial.Server.Phase == "" {
		initial.Server.Phase = controlapi.PhaseStopped
	}
	if initial.Vision.Encoder == "" {
		initial.Vision.Encoder = controlapi.EncoderUnknown
	}
	initial.Seq = bus.Last()
	return &Tracker{bus: bus, st: initial}
}

// Bus is the event bus the tracker publishes on.
func (t *Tracker) Bus() *events.Bus { return t.bus }

// Publish numbers e, folds it into the state and returns it.
func (t *Tracker) Publish(e events.Event) events.Event {
	t.mu.Lock()
	e = t.bus.Publish(e)
	Fold(&t.st, e)
	t.st.Seq = e.Seq
	t.mu.Unlock()
	if t.OnEvent != nil {
		t.OnEvent(e)
	}
	return e
}

// Snapshot is a copy of the state.
func (t *Tracker) Snapshot() controlapi.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.st
	if s.Remote != nil {
		r := *s.Remote
		s.Remote = &r
	}
	if s.Server.Foreign != nil {
		f := *s.Server.Foreign
		s.Server.Foreign = &f
	}
	s.Config.Rewritten = append([]string(nil), s.Config.Rewritten...)
	if len(s.Config.Rewritten) == 0 {
		s.Config.Rewritten = nil
	}
	return s
}

// Update changes the state outside the event stream (e.g. the config path
// after a settings change); it is not numbered.
func (t *Tracker) Update(f func(*controlapi.State)) {
	t.mu.Lock()
	f(&t.st)
	t.mu.Unlock()
}

// SetNEmbd records the n_embd the relay reported (not an event).
func (t *Tracker) SetNEmbd(n int) {
	if n <= 0 {
		return
	}
	t.Update(func(st *controlapi.State) {
		if st.Remote == nil {
			st.Remote = &controlapi.RemoteInfo{}
		}
		st.Remote.NEmbd = n
	})
}

// Fold applies e to st. It is a pure function of (st, e) so it is tested on
// its own and a client may use it to keep its own copy current.
func Fold(st *controlapi.State, e events.Event) {
	if fromEndedRelay(&st.Vision, e) {
		return
	}
	followRelay(&st.Vision, relayOf(e))
	if fold := folds[e.Kind]; fold != nil {
		fold(st, e)
	}
}

// folds are what each kind of event changes; a kind not here changes nothing.
var folds = map[events.Kind]func(*controlapi.State, events.Event){
	// The server's life.
	events.ServerStarting:   serverStarting,
	events.ServerProgress:   serverProgress,
	events.ServerReady:      serverReady,
	events.ServerExited:     serverExited,
	events.ServerRestarting: serverRestarting,
	events.ServerFailed:     serverFailed,
	events.ServerStopped:    serverStopped,
	events.ServerForeign:    serverForeign,
	events.ServerLogDropped: serverLogDropped,
	events.ExpertCache:      expertCache,
	events.ModelUnloaded:    modelUnloaded,
	events.ModelLoaded:      modelLoaded,
	events.EngineRestarted:  engineRestarted,
	// Its config.
	events.ConfigSwitched:  configSwitched,
	events.ConfigRewritten: configRewritten,
	events.ConfigChanged:   configChanged,
	// The encoder and the pictures.
	events.EncoderStarting:    encoderStarting,
	events.EncoderReady:       encoderReady,
	events.EncoderDegraded:    encoderDegraded,
	events.EncoderWoke:        encoderWoke,
	events.EncoderIdleStopped: encoderIdleStopped,
	events.EncoderFailed:      encoderFailed,
	events.PictureEncoded:     pictureEncoded,
	events.VisionFallback:     visionFallback,
	// The second PC.
	events.RemoteConnected:    remoteReachable,
	events.RemoteReachable:    remoteReachable,
	events.RemoteDisconnected: remoteDisconnected,
	events.RemoteUnreachable:  remoteUnreachable,
	events.RemoteWake:         remoteWake,
}

// fromEndedRelay: a late report of the relay Strata ended with its unload
// (the connection's end, a picture given up) says nothing of the encoder
// the next request starts.
func fromEndedRelay(vis *controlapi.VisionState, e events.Event) bool {
	pid := relayOf(e)
	return pid > 0 && pid == vis.EndedRelay
}

// followRelay takes the relay pid (0: not a relay's report) as the current
// one. Another relay (Strata started it again): what the last one saw of
// where pictures are read and how they went is not this one's.
func followRelay(vis *controlapi.VisionState, pid int) {
	if pid <= 0 || pid == vis.Relay {
		return
	}
	vis.Relay = pid
	vis.Device, vis.Host, vis.GPU, vis.VRAMMiB, vis.Degraded, vis.LastOK = "", "", "", 0, "", nil
	if vis.Encoder == controlapi.EncoderFailed || vis.Encoder == controlapi.EncoderDegraded || vis.Encoder == controlapi.EncoderUnloaded {
		vis.Encoder, vis.Error = controlapi.EncoderUnknown, ""
	}
}

// setPhase moves the server to phase p; Since is when it entered it.
func setPhase(srv *controlapi.ServerState, p string, at time.Time) {
	if srv.Phase != p {
		srv.Since = at
	}
	srv.Phase = p
}

// visionOn: pictures are read somewhere (a placement, and not off).
func visionOn(vis *controlapi.VisionState) bool {
	return vis.Placement != "" && vis.Placement != "off"
}

func serverStarting(st *controlapi.State, e events.Event) {
	srv, vis := &st.Server, &st.Vision
	setPhase(srv, controlapi.PhaseStarting, e.Time)
	srv.Detail = "starting"
	srv.PID = 0
	srv.Foreign = nil
	srv.Unloaded = time.Time{}
	endEncoder(vis)
	if p := events.Get[events.ServerStartingDetails](e).Port; p > 0 {
		srv.Port = p
	}
	srv.URL = ""
	if visionOn(vis) {
		vis.Encoder = controlapi.EncoderUnknown
	}
}

func serverProgress(st *controlapi.State, e events.Event) {
	if st.Server.Phase == controlapi.PhaseStarting {
		st.Server.Detail = e.Message
	}
}

func serverReady(st *controlapi.State, e events.Event) {
	srv, vis := &st.Server, &st.Vision
	if srv.Phase == controlapi.PhaseStarting && !srv.Since.IsZero() && e.Time.After(srv.Since) {
		srv.LastStartS = e.Time.Sub(srv.Since).Seconds()
	}
	setPhase(srv, controlapi.PhaseReady, e.Time)
	srv.Detail = ""
	srv.LastError = ""
	d := events.Get[events.ServerReadyDetails](e)
	readyDetails(srv, d)
	if (vis.Encoder == controlapi.EncoderUnknown || vis.Encoder == controlapi.EncoderStarting) && visionOn(vis) {
		if d.Images != nil && *d.Images {
			vis.Encoder = controlapi.EncoderReady
		}
	}
}

// readyDetails takes what the ready server said of itself; what it did not
// say stays as known.
func readyDetails(srv *controlapi.ServerState, d events.ServerReadyDetails) {
	if d.PID > 0 {
		srv.PID = d.PID
	}
	if d.URL != "" {
		srv.URL = d.URL
	}
	if d.Port > 0 {
		srv.Port = d.Port
	}
	if d.Model != "" {
		srv.Model = d.Model
	}
	if d.Context > 0 {
		srv.Context = d.Context
	}
	if d.Version != "" {
		srv.Version = d.Version
	}
	if d.Engine != "" {
		srv.Engine = d.Engine
	}
}

func serverExited(st *controlapi.State, e events.Event) {
	srv := &st.Server
	expected := events.Get[events.ServerExitedDetails](e).Expected
	srv.PID = 0
	srv.URL = ""
	srv.Unloaded = time.Time{}
	endEncoder(&st.Vision) // it ended with its server
	if !expected {
		setPhase(srv, controlapi.PhaseStopped, e.Time)
		srv.LastError = e.Message
		srv.Detail = e.Message
	}
}

func serverRestarting(st *controlapi.State, e events.Event) {
	setPhase(&st.Server, controlapi.PhaseRestarting, e.Time)
	st.Server.Restarts++
	st.Server.Detail = e.Message
}

func serverFailed(st *controlapi.State, e events.Event) {
	srv := &st.Server
	setPhase(srv, controlapi.PhaseFailed, e.Time)
	srv.Detail = e.Message
	srv.LastError = e.Message
	srv.PID = 0
	srv.URL = ""
}

func serverStopped(st *controlapi.State, e events.Event) {
	srv := &st.Server
	setPhase(srv, controlapi.PhaseStopped, e.Time)
	srv.Detail = ""
	srv.PID = 0
	srv.URL = ""
}

func serverForeign(st *controlapi.State, e events.Event) {
	srv := &st.Server
	setPhase(srv, controlapi.PhaseStopped, e.Time)
	srv.Detail = e.Message
	srv.PID = 0
	srv.URL = ""
	d := events.Get[events.ServerForeignDetails](e)
	srv.Foreign = &controlapi.ForeignServer{Port: d.Port, PID: d.PID, Cmdline: d.Cmdline}
}

func serverLogDropped(st *controlapi.State, e events.Event) {
	d := events.Get[events.ServerLogDroppedDetails](e)
	st.Server.LogDropped = d.Dropped
	st.Server.LogProblem = ""
	if !d.Writing {
		st.Server.LogProblem = e.Message
	}
}

func expertCache(st *controlapi.State, e events.Event) {
	srv, vis := &st.Server, &st.Vision
	d := events.Get[events.ExpertCacheDetails](e)
	if d.Experts > 0 {
		srv.Experts = d.Experts
	}
	if d.GiB > 0 {
		srv.ExpertCacheGiB = d.GiB
	}
	if vis.Encoder == controlapi.EncoderStarting {
		// Strata starts its engine only once the encoder answered
		// READY (the encoder first, at a start and at a reload): the
		// encoder's own start is over. A relay's READY is at once;
		// the second PC's encoder starts with the first picture.
		vis.Encoder = controlapi.EncoderReady
	}
}

func modelUnloaded(st *controlapi.State, e events.Event) {
	srv, vis := &st.Server, &st.Vision
	srv.Unloaded = e.Time
	srv.Detail = e.Message + "; the next request loads it again"
	if visionOn(vis) && vis.Encoder != controlapi.EncoderOff {
		vis.Encoder = controlapi.EncoderUnloaded
		vis.Error = ""
	}
	vis.EndedRelay = vis.Relay
	endEncoder(vis)
}

func modelLoaded(st *controlapi.State, e events.Event) {
	srv, vis := &st.Server, &st.Vision
	srv.Unloaded = time.Time{}
	if srv.Phase == controlapi.PhaseReady {
		srv.Detail = ""
	}
	if vis.Encoder == controlapi.EncoderUnloaded || vis.Encoder == controlapi.EncoderStarting {
		// Loaded again: Strata started its encoder first.
		vis.Encoder = controlapi.EncoderReady
	}
}

func engineRestarted(st *controlapi.State, e events.Event) {
	if !events.Get[events.EngineRestartedDetails](e).EngineRunning {
		st.Server.Detail = e.Message
	} else if st.Server.Phase == controlapi.PhaseReady {
		st.Server.Detail = ""
	}
}

func configSwitched(st *controlapi.State, e events.Event) {
	d := events.Get[events.ConfigSwitchedDetails](e)
	if d.Running != "" {
		st.Config.Path = d.Running
	}
	if d.StrataRoot != "" {
		st.Config.StrataRoot = d.StrataRoot
	}
	st.Config.Rewritten = nil
}

func configRewritten(st *controlapi.State, e events.Event) {
	st.Config.Rewritten = events.Get[events.ConfigRewrittenDetails](e).Findings
}

func configChanged(st *controlapi.State, e events.Event) {
	vis := &st.Vision
	d := events.Get[events.ConfigChangedDetails](e)
	if p := d.Placement; p != "" {
		vis.Placement = p
		if p == "off" {
			vis.Encoder = controlapi.EncoderOff
			vis.Error = ""
			// Where the last encoder read is no longer where pictures
			// go: nothing reads them now.
			vis.Device, vis.Host, vis.GPU, vis.VRAMMiB, vis.Degraded = "", "", "", 0, ""
			vis.IdleStopped, vis.WokeAt = time.Time{}, time.Time{}
		} else if vis.Encoder == controlapi.EncoderOff {
			// Back on without a restart (the relay routes by the
			// settings): the next picture tells how it goes.
			vis.Encoder = controlapi.EncoderUnknown
		}
	}
	if d.Path != "" {
		st.Config.Path = d.Path
	}
}

func encoderStarting(st *controlapi.State, e events.Event) {
	st.Vision.Encoder = controlapi.EncoderStarting
	st.Vision.Error = ""
}

func encoderReady(st *controlapi.State, e events.Event) {
	vis := &st.Vision
	vis.Encoder = controlapi.EncoderReady
	vis.Error = ""
	vis.IdleStopped = time.Time{}
	r := events.Get[events.EncoderReadyDetails](e)
	if r.Device == "" {
		return
	}
	d := r.Device
	vis.Device, vis.Host, vis.GPU, vis.VRAMMiB = d, r.Host, r.GPU, 0
	if r.VRAMMiB != nil {
		vis.VRAMMiB = *r.VRAMMiB
	}
	vis.Degraded = ""
	if r.ExpectedDevice == "gpu" && d != "gpu" {
		vis.Encoder = controlapi.EncoderDegraded
		vis.Degraded = "a GPU was expected"
	}
}

func encoderDegraded(st *controlapi.State, e events.Event) {
	st.Vision.Encoder = controlapi.EncoderDegraded
	st.Vision.Degraded = e.Message
}

func encoderWoke(st *controlapi.State, e events.Event) {
	vis := &st.Vision
	vis.Encoder = controlapi.EncoderReady
	vis.Error = ""
	vis.IdleStopped = time.Time{}
	vis.WokeAt = e.Time
	d := events.Get[events.EncoderWokeDetails](e)
	if d.WakeMS > 0 {
		vis.LastWakeMS = int(d.WakeMS)
	} else if d.StartMS > 0 {
		vis.LastWakeMS = int(d.StartMS)
	}
	if d.EncodeMS > 0 {
		vis.LastPictureMS = int(d.EncodeMS)
		vis.LastPicture = e.Time
	}
}

func encoderIdleStopped(st *controlapi.State, e events.Event) {
	st.Vision.Encoder = controlapi.EncoderIdle
	st.Vision.IdleStopped = e.Time
}

func encoderFailed(st *controlapi.State, e events.Event) {
	st.Vision.Encoder = controlapi.EncoderFailed
	st.Vision.Error = e.Message
}

// pictureEncoded is one per picture, OK or not (an older relay sent OK
// ones only).
func pictureEncoded(st *controlapi.State, e events.Event) {
	vis := &st.Vision
	d := events.Get[events.PictureEncodedDetails](e)
	where := d.Where
	ok := d.OK == nil || *d.OK
	if ok {
		pictureRead(st, e, d)
	} else if where != "off" {
		vis.Encoder = controlapi.EncoderFailed
		vis.Error = e.Message
	}
	vis.LastOK = &ok
}

// pictureRead is a picture read well, where d says.
func pictureRead(st *controlapi.State, e events.Event, d events.PictureEncodedDetails) {
	vis := &st.Vision
	where := d.Where
	if d.MS > 0 {
		vis.LastPictureMS = int(d.MS)
	}
	if where != "" {
		vis.LastWhere = where
	}
	vis.LastPicture = e.Time
	vis.Error = ""
	vis.Encoder = controlapi.EncoderReady
	vis.IdleStopped = time.Time{}
	if vis.Degraded != "" && where == "remote" {
		vis.Encoder = controlapi.EncoderDegraded
	}
	if where == "remote" && st.Remote != nil {
		// A picture read there: it is reachable, whatever an
		// older connection's end said.
		if !st.Remote.Reachable {
			st.Remote.Since = e.Time
		}
		st.Remote.Reachable, st.Remote.Reason = true, ""
	}
}

func visionFallback(st *controlapi.State, e events.Event) {
	st.Vision.Fallbacks++
	st.Vision.LastFallback = e.Time
}

// remoteReachable is remote.connected and remote.reachable: the second PC
// answers, with what it said of itself.
func remoteReachable(st *controlapi.State, e events.Event) {
	r := remote(st, e)
	if !r.Reachable {
		r.Since = e.Time
	}
	r.Reachable = true
	r.Reason = ""
	d := events.Get[events.RemoteConnectedDetails](e)
	if e.Kind == events.RemoteReachable {
		x := events.Get[events.RemoteReachableDetails](e)
		d = events.RemoteConnectedDetails{RTTms: x.RTTms, FreeVRAMMiB: x.FreeVRAMMiB, GPU: x.GPU}
	}
	if d.RTTms > 0 {
		r.RTTms = d.RTTms
	}
	if d.FreeVRAMMiB > 0 {
		r.FreeVRAMMiB = d.FreeVRAMMiB
	}
	if d.GPU != "" {
		r.GPU = d.GPU
	}
}

// remoteDisconnected: a connection that closed (sshd restarted, the relay
// switched away) is not an unreachable PC: the next picture dials again and
// says (remote.unreachable when it fails).
func remoteDisconnected(st *controlapi.State, e events.Event) {
	remote(st, e)
}

func remoteUnreachable(st *controlapi.State, e events.Event) {
	r := remote(st, e)
	if r.Reachable || r.Since.IsZero() {
		r.Since = e.Time
	}
	r.Reachable = false
	r.Reason = e.Message
}

func remoteWake(st *controlapi.State, e events.Event) {
	vis := &st.Vision
	d := events.Get[events.RemoteWakeDetails](e)
	switch {
	case d.OK == nil:
		vis.Wakes++
		vis.LastWake = "sent"
	case *d.OK:
		vis.LastWake = "woke"
		vis.LastWokeMS = int(d.WokeMS)
	default:
		vis.LastWake = "no_answer"
	}
}

// endEncoder forgets the running encoder (its server ended it): its relay,
// where it read and the VRAM it held. What pictures did (the last one, the
// fallbacks, the wakes) stays.
func endEncoder(vis *controlapi.VisionState) {
	vis.Relay = 0
	vis.Device, vis.Host, vis.GPU, vis.VRAMMiB, vis.Degraded = "", "", "", 0, ""
	vis.IdleStopped = time.Time{}
}

func remote(st *controlapi.State, e events.Event) *controlapi.RemoteInfo {
	if st.Remote == nil {
		st.Remote = &controlapi.RemoteInfo{}
	}
	if h := events.CommonOf(e).Host; h != "" {
		st.Remote.Host = h
	}
	return st.Remote
}

// relayOf is the relay that reported e (0: not a relay's report).
func relayOf(e events.Event) int { return events.CommonOf(e).Relay }

// Summary is a one-line description of st for `status` and logs.
func Summary(st controlapi.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %s", st.Server.Phase)
	if st.Server.URL != "" {
		fmt.Fprintf(&b, " at %s", st.Server.URL)
	}
	if !st.Server.Since.IsZero() {
		fmt.Fprintf(&b, " (since %s)", st.Server.Since.Local().Format(time.TimeOnly))
	}
	if st.Server.Detail != "" {
		fmt.Fprintf(&b, ": %s", st.Server.Detail)
	}
	return b.String()
}
