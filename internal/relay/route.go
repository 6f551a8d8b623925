package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/agent"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/wol"
)

// OffMessage answers every picture while pictures are switched off.
const OffMessage = "ERR pictures are switched off in Strata Companion"

// Encode reads one picture where the settings say now and returns the reply
// line ("OK ..." or "ERR ..."): the second PC, this PC's CPU, or nowhere.
// The settings are looked at for every picture (Options.Settings), so a
// change takes effect on the next picture with no restart of anything.
// Every picture's outcome is one vision.picture event: where it was read
// (or meant to be), how long it took, ok or the reason.
func (r *Relay) Encode(ctx context.Context, img, out string) string {
	t0 := time.Now()
	r.pic = pictureNote{}
	reply := r.route(ctx, img, out)
	r.reportOutcome(reply, time.Since(t0))
	return reply
}

// reportOutcome sends the picture's one outcome event.
func (r *Relay) reportOutcome(reply string, d time.Duration) {
	n := r.pic
	if n.where == "" {
		n.where = events.WhereNone
	}
	ok := strings.HasPrefix(reply, "OK ")
	details := events.PictureEncodedDetails{MS: d.Milliseconds(), Where: n.where, OK: &ok, Host: n.host}
	msg := ""
	if ok {
		details.EncodeMS, details.Tokens = int64(n.encodeMS), n.tokens
	} else {
		msg = strings.TrimPrefix(reply, "ERR ")
		details.Error = msg
	}
	r.emit(msg, details)
}

func (r *Relay) route(ctx context.Context, img, out string) string {
	if r.opt.ArgsProblem != "" {
		return "ERR " + oneLine(r.opt.ArgsProblem) + "; pictures are unavailable until Strata's vision block is fixed, text still works"
	}
	if r.opt.Settings == nil {
		r.pic.where = events.WhereRemote
		return r.encodeRemote(ctx, img, out)
	}
	st, err := r.opt.Settings()
	if err != nil {
		return "ERR " + oneLine(err.Error()) + "; pictures are unavailable until it is fixed, text still works"
	}
	switch st.Vision {
	case settings.PlacementOff:
		r.pic.where = events.WhereOff
		r.dropSession() // the second PC gets its VRAM back
		r.local.stop(bounds.LocalEncoderQuit)
		return OffMessage
	case settings.PlacementCPU:
		r.pic.where = events.WhereLocalCPU
		r.dropSession()
		if msg := checkPicture(img); msg != "" {
			return msg
		}
		return r.encodeLocal(ctx, st, img, out, events.WhereLocalCPU)
	case settings.PlacementGPU:
		r.local.stop(time.Second)
		return "ERR pictures move to this PC's GPU when Strata restarts (its GPU encoder must take its VRAM before the expert cache is sized); restart Strata from the tray, or with `strata-service stop` and `strata-service start` (administrator/root)"
	}
	r.pic.where = events.WhereRemote
	if msg := checkPicture(img); msg != "" {
		return msg
	}
	if st.Remote == nil || st.Remote.Host == "" {
		return "ERR no second PC is set in the companion settings; pair one first (strata-service remote pair)"
	}
	if err := st.Remote.Check(); err != nil {
		// Nothing is dialed, woken or run from a record that does not pass.
		return "ERR the second PC in the companion settings cannot be used: " + oneLine(err.Error()) + "; pair it again (strata-service remote pair), then prepare it"
	}
	if err := r.useTarget(*st.Remote); err != nil {
		return "ERR " + oneLine(err.Error())
	}
	if ch := r.link.firstDial(); ch != nil {
		// The connection opened at start is on its way: wait for it
		// rather than dial a second one.
		select {
		case <-ch:
		case <-ctx.Done():
			return "ERR the relay is stopping"
		}
	}
	if down, why := r.link.isDown(); down {
		if r.wake(ctx, st) {
			return r.encodeRemote(ctx, img, out)
		}
		return r.unreachable(ctx, st, img, out, why)
	}
	epoch := r.link.epochNow()
	reply := r.encodeRemote(ctx, img, out)
	if strings.HasPrefix(reply, "OK ") {
		r.local.stop(bounds.LocalEncoderQuit) // pictures left this PC's CPU: its RAM back
	}
	if strings.HasPrefix(reply, "ERR ") && ctx.Err() == nil && (r.link.epochNow() != epoch || r.pic.dialFailed) {
		// This picture found it down. Only a PC it could not connect to
		// may be asleep: a link lost in the middle of a picture is a
		// network's fault, and waiting up to wait_s for a wake here would
		// hold text that long (the next picture wakes a PC still down).
		if r.pic.dialFailed && r.wake(ctx, st) {
			return r.encodeRemote(ctx, img, out)
		}
		return r.unreachable(ctx, st, img, out, strings.TrimPrefix(reply, "ERR "))
	}
	return reply
}

// FallbackOn says whether a picture the second PC cannot take is read on
// this PC's CPU. Off unless the user turned it on: the CPU is several times
// slower (15 s against 2.8 s per picture on the reference machine), and in
// Strata's main repository text waits while any picture is read, so a silent
// fallback would turn a clear ERR into long stalls of text (docs/relay.md).
func FallbackOn(st *settings.Settings) bool { return st.FallbackCPU != nil && *st.FallbackCPU }

// unreachable answers a picture the second PC cannot take: this PC's CPU
// when the fallback is on (one event per outage), else ERR at once.
func (r *Relay) unreachable(ctx context.Context, st *settings.Settings, img, out, why string) string {
	if !FallbackOn(st) {
		return "ERR " + why
	}
	if st.LocalEncoder == "" {
		return "ERR " + why + " (the fallback to this PC's CPU is on, but this PC's strata-vision is not recorded in the companion settings: run the setup again)"
	}
	r.pic.where = events.WhereFallbackCPU
	if r.link.noteFallback() {
		r.emit("pictures are read on this PC's CPU while the second PC cannot be reached: "+why,
			events.VisionFallbackDetails{Host: r.host()})
	}
	return r.encodeLocal(ctx, st, img, out, events.WhereFallbackCPU)
}

// targetKey is what makes a second PC another one (the idle stop is not:
// it is applied to the running agent).
func targetKey(rm settings.Remote) string {
	d := RemoteDevice(rm)
	return fmt.Sprintf("%q %d %q %q %q %q %q %q %v %d %d %d", rm.Host, rm.Port, rm.User, rm.HostKey, rm.KeyFile, rm.RemoteDir, rm.OS, rm.EncoderPath,
		d.GPU, d.CUDADevice, d.MaxTokens, d.Threads)
}

// useTarget points the relay at the settings' second PC; when it is another
// PC than before, the old session and connection are closed.
func (r *Relay) useTarget(rm settings.Remote) error {
	r.link.setWakeOn(rm.Wake != nil && rm.Wake.Enabled && rm.MAC != "")
	if r.opt.Target == nil {
		return nil
	}
	key := targetKey(rm)
	if key == r.targetKey {
		if rm.IdleStopS != r.idleStopS {
			r.idleStopS = rm.IdleStopS
			if s := r.currentSession(); s != nil {
				s.fw.WriteJSON(framing.SetIdle, framing.IdleSetting{IdleStopS: rm.IdleStopS})
			}
		}
		return r.targetErr
	}
	t := r.opt.Target(rm)
	if r.targetKey != "" {
		r.dropSession()
		r.closeConn()
		r.link.reset()
		r.wokeAt = time.Time{}
	}
	r.hostMu.Lock()
	r.opt.Host, r.opt.Dial, r.opt.AgentCommand = t.Host, t.Dial, t.AgentCommand
	r.hostMu.Unlock()
	r.targetKey, r.idleStopS, r.cmdIdleS, r.device, r.startMS = key, rm.IdleStopS, t.IdleStopS, t.Device, rm.EncoderStartMS
	r.targetErr, r.targetOS = t.Err, t.OS
	return t.Err
}

// start looks at the settings once READY is out: with pictures on the second
// PC, it connects in the background, so the first picture finds the
// connection open, or knows at once that the PC is down.
func (r *Relay) start() {
	if r.opt.Settings == nil {
		return
	}
	st, err := r.opt.Settings()
	if err != nil || st.Remote == nil || st.Remote.Host == "" {
		return
	}
	if st.Vision != settings.PlacementRemote && st.Vision != "" {
		return
	}
	if st.Remote.Check() != nil || r.useTarget(*st.Remote) != nil {
		return // the first picture says why; nothing is dialed from such a record
	}
	r.link.ensureRetry(r, true)
}

// markDown records that the second PC cannot be reached: pictures are
// answered at once (fallback or ERR) until the background retry reaches it.
func (r *Relay) markDown(why string) {
	r.link.markDown(why)
	r.link.ensureRetry(r, false)
}

// retry dials the second PC every RetryEvery (or when kicked) until it
// answers; the connection is kept for the next picture.
func (r *Relay) retry(stop, kick chan struct{}, now bool, first chan struct{}) {
	defer r.wg.Done()
	done := func() {
		if first != nil {
			close(first)
			first = nil
		}
	}
	defer done()
	for {
		if !now {
			select {
			case <-stop:
				return
			case <-time.After(r.opt.RetryEvery):
			case <-kick:
			}
		}
		now = false
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		t0 := time.Now()
		c, err := r.dial(ctx)
		cancel()
		if err != nil {
			select {
			case <-stop:
				return
			default:
			}
			if time.Since(t0) < r.opt.SlowFailure && !r.link.wakeOnNow() {
				r.link.quickFailure(stop)
				return
			}
			r.link.markDown(err.Error())
			done()
			continue
		}
		r.link.up(c, stop) // dial reported it reachable again
		return
	}
}

// wake sends the Wake-on-LAN packet (once per outage) and waits up to the
// configured time for the second PC's ssh; true when it answered.
func (r *Relay) wake(ctx context.Context, st *settings.Settings) bool {
	rm := st.Remote
	if rm.Wake == nil || !rm.Wake.Enabled || rm.MAC == "" {
		return false
	}
	wait := time.Duration(rm.Wake.WaitS) * time.Second
	if wait <= 0 {
		wait = bounds.WakeWait
	}
	if !r.wokeAt.IsZero() && time.Since(r.wokeAt) < wait+bounds.WakeAgain {
		return false // woken lately and still down: do not hold every picture
	}
	r.wokeAt = time.Now()
	bcast, port := rm.Wake.Broadcast, rm.Wake.Port
	if bcast == "" {
		bcast = wol.DefaultBroadcast
	}
	if port <= 0 {
		port = wol.DefaultPort
	}
	send := r.opt.Wake
	if send == nil {
		send = wol.Send
	}
	details := events.RemoteWakeDetails{Host: r.host(), MAC: rm.MAC, Broadcast: bcast, Port: port, WaitS: int(wait / time.Second)}
	yes, no := true, false
	if err := send(rm.MAC, bcast, port); err != nil {
		details.OK = &no
		r.emit("could not send the Wake-on-LAN packet: "+err.Error(), details)
		return false
	}
	r.emit("sent a Wake-on-LAN packet to second PC "+r.host(), details)
	t0 := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(bounds.WakeKick)
	defer tick.Stop()
	r.link.ensureRetry(r, true)
	for {
		if down, _ := r.link.isDown(); !down {
			r.emit("second PC "+r.host()+" woke", events.RemoteWakeDetails{Host: r.host(), OK: &yes, WokeMS: time.Since(t0).Milliseconds()})
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			r.emit(fmt.Sprintf("second PC %s did not answer within %s of the wake", r.host(), wait),
				events.RemoteWakeDetails{Host: r.host(), OK: &no, WaitS: int(wait / time.Second)})
			return false
		case <-tick.C:
			r.link.kickRetry()
		}
	}
}

// encodeLocal reads one picture with this PC's strata-vision on the CPU,
// kept running between pictures.
func (r *Relay) encodeLocal(ctx context.Context, st *settings.Settings, img, out, where string) string {
	if ctx.Err() != nil {
		return "ERR the relay is stopping"
	}
	if st.LocalEncoder == "" {
		return "ERR this PC's strata-vision is not recorded in the companion settings (local_encoder); run the setup again, or choose where pictures are read in the tray"
	}
	d := LocalCPUDevice(st)
	args := []string{"--mmproj", CPUProjector(r.opt.LocalMmproj), "--model", r.opt.LocalModel,
		"--threads", strconv.Itoa(d.Threads), "--max-tokens", strconv.Itoa(d.MaxTokens)}
	args = append(args, r.opt.ExtraArgs...)
	enc, startMS, err := r.local.get(st.LocalEncoder, args, r.note)
	if err != nil {
		msg := "this PC's encoder " + st.LocalEncoder + " did not start: " + oneLine(err.Error())
		r.emit(msg, events.EncoderFailedDetails{Where: where})
		return "ERR " + msg + "; text still works"
	}
	if startMS >= 0 {
		w := enc.Where(false)
		r.reportWhere(where, "", startMS, &w, enc.Args())
	}
	t0 := time.Now()
	bound := r.ltimes.bound(0, DefaultRequestTimeout)
	line, err := enc.Request(ctx, "ENC "+img+" "+out, bound)
	if err != nil {
		tail := enc.Tail()
		r.local.drop()
		switch {
		case ctx.Err() != nil:
			return "ERR the relay is stopping"
		case errors.Is(err, agent.ErrEncoderStopped):
			msg := "this PC's encoder stopped while reading the picture"
			if tail != "" {
				msg += " (" + oneLine(tail) + ")"
			}
			return "ERR " + msg + "; the next picture starts it again"
		}
		return fmt.Sprintf("ERR this PC's encoder gave no result within %s; it was stopped, the next picture starts it again", bound.Round(100*time.Millisecond))
	}
	if strings.HasPrefix(line, "OK ") {
		r.ltimes.add(time.Since(t0), 0)
		r.pic.tokens, r.pic.encodeMS = okFields(line)
	}
	return line
}

// localEncoder is this PC's strata-vision, started on the first picture read
// on the CPU and kept; another path or other arguments start another.
type localEncoder struct {
	mu  sync.Mutex
	enc *agent.Encoder
	key string
}

// get returns the running encoder, starting it when needed (startMS is the
// start's time then, -1 when it was running).
func (l *localEncoder) get(path string, args []string, note func(string)) (*agent.Encoder, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := path + "\x00" + strings.Join(args, "\x00")
	if l.enc != nil && l.enc.Alive() && l.key == key {
		return l.enc, -1, nil
	}
	if l.enc != nil {
		l.enc.Stop(bounds.LocalEncoderQuit)
		l.enc = nil
	}
	t0 := time.Now()
	// Its stderr ("strata-vision: ...") must not reach Strata's engine log:
	// only its last line is kept, for messages.
	enc, err := agent.StartEncoderEnv(path, args, nil, noteWriter(note), bounds.LocalEncoderStart)
	if err != nil {
		return nil, 0, err
	}
	l.enc, l.key = enc, key
	return enc, time.Since(t0).Milliseconds(), nil
}

// drop kills the encoder (after a cancelled or failed picture).
func (l *localEncoder) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc != nil {
		l.enc.Stop(0)
		l.enc = nil
	}
}

// stop ends the encoder with QUIT, killing it after grace.
func (l *localEncoder) stop(grace time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc != nil {
		l.enc.Stop(grace)
		l.enc = nil
	}
}

// linkState is what the relay knows about reaching the second PC.
type linkState struct {
	mu       sync.Mutex
	reach    int // 1 up, -1 unreachable, 0 unknown: events on transitions only
	down     bool
	why      string
	epoch    int
	fellBack bool
	spare    Conn
	stop     chan struct{} // the retry loop's, nil when none runs
	kick     chan struct{}
	first    chan struct{} // closed when the retry's immediate first dial ended
	wakeOn   bool          // Wake-on-LAN is set up: any failure may be a PC asleep
}

func (l *linkState) setWakeOn(v bool) {
	l.mu.Lock()
	l.wakeOn = v
	l.mu.Unlock()
}

func (l *linkState) wakeOnNow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wakeOn
}

// firstDial is the channel of an immediate first dial in progress, or nil.
func (l *linkState) firstDial() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == nil {
		return nil
	}
	select {
	case <-l.first:
		l.first = nil
		return nil
	default:
		return l.first
	}
}

func (l *linkState) init() {}

// setReachable records a dial's outcome and returns the one before.
func (l *linkState) setReachable(v int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.reach
	l.reach = v
	return prev
}

// clearFallback: the next outage's first fallback is reported again.
func (l *linkState) clearFallback() {
	l.mu.Lock()
	l.fellBack = false
	l.mu.Unlock()
}

// quickFailure ends a background retry whose dial failed quickly (the PC
// answers, refusing): not known down any more; the next picture dials.
func (l *linkState) quickFailure(stop chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == stop {
		l.stop, l.kick = nil, nil
		l.down, l.why = false, ""
	}
}

func (l *linkState) markDown(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.down {
		l.epoch++
	}
	l.down, l.why = true, why
}

func (l *linkState) isDown() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down, l.why
}

func (l *linkState) epochNow() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// noteFallback is true for the first fallback of an outage.
func (l *linkState) noteFallback() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := !l.fellBack
	l.fellBack = true
	return first
}

// up keeps c for the next picture and ends the outage; true when the PC
// was known down.
func (l *linkState) up(c Conn, stop chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != stop { // the retry was stopped meanwhile
		c.Close()
		return false
	}
	if l.spare != nil {
		l.spare.Close()
	}
	l.spare = c
	wasDown := l.down
	l.down, l.why, l.fellBack = false, "", false
	l.stop, l.kick = nil, nil
	return wasDown
}

func (l *linkState) takeSpare() Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.spare
	l.spare = nil
	if c != nil {
		select {
		case <-c.Done():
			return nil
		default:
		}
	}
	return c
}

// ensureRetry starts the background retry unless it runs (now: try at once).
func (l *linkState) ensureRetry(r *Relay, now bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		return
	}
	l.stop, l.kick = make(chan struct{}), make(chan struct{}, 1)
	var first chan struct{}
	if now {
		first = make(chan struct{})
		l.first = first
	}
	r.wg.Add(1)
	go r.retry(l.stop, l.kick, now, first)
}

func (l *linkState) kickRetry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kick != nil {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *linkState) stopRetry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		l.stop, l.kick = nil, nil
	}
	if l.spare != nil {
		l.spare.Close()
		l.spare = nil
	}
}

// reset forgets everything about the old second PC.
func (l *linkState) reset() {
	l.stopRetry()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reach, l.down, l.why, l.fellBack = 0, false, "", false
}

// pictureTimes keeps what the last pictures took, for their bound.
type pictureTimes struct {
	mu    sync.Mutex
	walls []time.Duration
	rates []float64 // bytes per second, wall time included (a lower bound of the link)
}

const keepTimes = 16

func (p *pictureTimes) add(d time.Duration, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.walls = append(p.walls, d)
	if len(p.walls) > keepTimes {
		p.walls = p.walls[1:]
	}
	if bytes > 0 && d > 0 {
		p.rates = append(p.rates, float64(bytes)/d.Seconds())
		if len(p.rates) > keepTimes {
			p.rates = p.rates[1:]
		}
	}
}

func median[T time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func (p *pictureTimes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.walls)
}

func (p *pictureTimes) median() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return median(p.walls)
}

// Bound parameters: a picture may take boundFactor times the recent median,
// plus twice its transfer at the measured rate, and never less than
// boundFloor (a GPU encoder's wake after an idle stop fits in it).
const (
	boundFactor = bounds.PictureFactor
	boundFloor  = bounds.PictureFloor
	minSamples  = bounds.TimedPictures
)

// bound is how long a picture of size bytes may take: first until
// minSamples pictures were timed, then from what they took.
func (p *pictureTimes) bound(size int, first time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.walls) < minSamples {
		return first
	}
	b := boundFactor * median(p.walls)
	if rate := median(p.rates); rate > 0 && size > 0 {
		b += 2 * time.Duration(float64(size)/rate*float64(time.Second))
	}
	return max(b, boundFloor)
}

func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// checkPicture refuses what is not a regular file before anything reads it
// (a device reads without end, a FIFO blocks for ever); the size cap while
// reading is the transfer's.
func checkPicture(img string) string {
	fi, err := os.Stat(img)
	if err != nil {
		return "ERR cannot read the picture " + img + ": " + errText(err)
	}
	if !fi.Mode().IsRegular() {
		return "ERR " + img + " is not a regular file; pictures are read from files only"
	}
	return ""
}

// firstNote: line was not noted before by this relay (the second PC's
// notes repeat at each agent session).
func (r *Relay) firstNote(line string) bool {
	r.notedMu.Lock()
	defer r.notedMu.Unlock()
	if r.noted == nil {
		r.noted = map[string]bool{}
	}
	if r.noted[line] {
		return false
	}
	r.noted[line] = true
	return true
}

// note hands a line for a person to Options.Notes.
func (r *Relay) note(line string) {
	if r.opt.Notes != nil {
		r.opt.Notes(line)
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

// okFields reads the tokens and the encode time of "OK n nx ny ms".
func okFields(line string) (tokens, encodeMS int) {
	f := strings.Fields(line)
	if len(f) >= 5 {
		tokens, _ = strconv.Atoi(f[1])
		encodeMS, _ = strconv.Atoi(f[4])
	}
	return tokens, encodeMS
}

// reportWhere sends vision.ready for an encoder that just started at place
// ("remote", "local_cpu", "fallback_cpu"): where it really reads pictures,
// from its own start line. An encoder on a CPU where a GPU was expected is
// degraded: vision.degraded, once until that changes.
func (r *Relay) reportWhere(place, host string, startMS int64, w *framing.Where, args []string) {
	details := events.EncoderReadyDetails{StartMS: startMS, Where: place, Host: host, Args: strings.Join(args, " ")}
	if w != nil {
		details.Device, details.GPU, details.Threads, details.Tokens, details.ExpectedDevice = w.Device, w.GPU, w.Threads, w.Tokens, w.Expected
		if v, ok := w.VRAM(); ok {
			details.VRAMMiB = &v // 0 included: a figure, not an unknown
		}
	}
	r.emit("", details)
	r.whereMu.Lock()
	if r.lastWhere == nil {
		r.lastWhere = map[string]framing.Where{}
	}
	prev, seen := r.lastWhere[place]
	if w != nil {
		r.lastWhere[place] = *w
	}
	r.whereMu.Unlock()
	if w.Degraded() && !(seen && prev.Degraded()) {
		why := w.Reason
		if why == "" {
			why = "its start line says so"
		}
		msg := fmt.Sprintf("pictures are read on the second PC's CPU, not its GPU (%s); they take several times longer", why)
		r.emit(msg, events.EncoderDegradedDetails{Where: place, Host: host, Device: w.Device, ExpectedDevice: w.Expected, Reason: why})
	}
}
