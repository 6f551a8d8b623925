package relay

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/wol"
)

// OffMessage answers every picture while pictures are switched off.
const OffMessage = "ERR pictures are switched off in Strata Companion"

// router is a picture's way (the concern of Encode): which placement reads
// it (the settings, looked at per picture), the second PC in the settings
// (its target), the fallback to this PC's CPU and the wake of a sleeping
// second PC, the picture itself there (remote.go) or here (local.go), and
// the outcome event. All of it is the picture's: Run hands one picture at a
// time to Encode on one goroutine and waits for it, so the router needs no
// lock (what it shares with background goroutines is the link's, and this
// PC's encoder has its own). Options are read, never written.
type router struct {
	opt  *Options
	out  *output
	link *link

	local  localEncoder
	times  pictureTimes // pictures on the second PC
	ltimes pictureTimes // pictures on this PC's CPU
	nextID uint32

	// The second PC in use (useTarget).
	targetKey string
	targetErr error         // Target.Err of the second PC in use
	device    remote.Device // what its encoder was told to use
	startMS   int           // the encoder's start there as prepare measured it
	wokeAt    time.Time

	pic pictureNote // what the picture in hand did, for its outcome event
}

// pictureNote is what the picture in hand did: where it went and what the
// encoder said, for the one outcome event per picture.
type pictureNote struct {
	where    string
	host     string
	encodeMS int
	tokens   int
	// dialFailed: it could not reach the second PC (fallback or wake).
	dialFailed bool
}

// encode is Relay.Encode.
func (rt *router) encode(ctx context.Context, img, out string) string {
	t0 := time.Now()
	rt.pic = pictureNote{}
	reply := rt.route(ctx, img, out)
	rt.reportOutcome(reply, time.Since(t0))
	return reply
}

// reportOutcome sends the picture's one outcome event.
func (rt *router) reportOutcome(reply string, d time.Duration) {
	n := rt.pic
	if n.where == "" {
		n.where = events.WhereNone
	}
	ok := strings.HasPrefix(reply, "OK ")
	details := events.PictureEncodedDetails{RelayMark: relayMark, MS: d.Milliseconds(), Where: n.where, OK: &ok, Host: n.host}
	msg := ""
	if ok {
		details.EncodeMS, details.Tokens = int64(n.encodeMS), n.tokens
	} else {
		msg = strings.TrimPrefix(reply, "ERR ")
		details.Error = msg
	}
	rt.out.emit(msg, details)
}

func (rt *router) route(ctx context.Context, img, out string) string {
	if rt.opt.ArgsProblem != "" {
		return "ERR " + oneLine(rt.opt.ArgsProblem) + "; pictures are unavailable until Strata's vision block is fixed, text still works"
	}
	if rt.opt.Settings == nil {
		rt.pic.where = events.WhereRemote
		return rt.encodeRemote(ctx, img, out)
	}
	st, err := rt.opt.Settings()
	if err != nil {
		return "ERR " + oneLine(err.Error()) + "; pictures are unavailable until it is fixed, text still works"
	}
	switch st.Vision {
	case settings.PlacementOff:
		rt.pic.where = events.WhereOff
		rt.link.dropSession() // the second PC gets its VRAM back
		rt.local.stop(bounds.LocalEncoderQuit)
		return OffMessage
	case settings.PlacementCPU:
		rt.pic.where = events.WhereLocalCPU
		rt.link.dropSession()
		if msg := checkPicture(img); msg != "" {
			return msg
		}
		return rt.encodeLocal(ctx, st, img, out, events.WhereLocalCPU)
	case settings.PlacementGPU:
		rt.local.stop(bounds.LocalEncoderQuit)
		return "ERR pictures move to this PC's GPU when Strata restarts (its GPU encoder must take its VRAM before the expert cache is sized); restart Strata from the tray, or with `strata-service stop` and `strata-service start` (administrator/root)"
	}
	rt.pic.where = events.WhereRemote
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
	if err := rt.useTarget(*st.Remote); err != nil {
		return "ERR " + oneLine(err.Error())
	}
	if ch := rt.link.reach.firstDial(); ch != nil {
		// The connection opened at start is on its way: wait for it
		// rather than dial a second one.
		select {
		case <-ch:
		case <-ctx.Done():
			return "ERR the relay is stopping"
		}
	}
	if down, why := rt.link.reach.isDown(); down {
		if rt.wake(ctx, st) {
			return rt.encodeRemote(ctx, img, out)
		}
		return rt.unreachable(ctx, st, img, out, why)
	}
	epoch := rt.link.reach.epochNow()
	reply := rt.encodeRemote(ctx, img, out)
	if strings.HasPrefix(reply, "OK ") {
		rt.local.stop(bounds.LocalEncoderQuit) // pictures left this PC's CPU: its RAM back
	}
	if strings.HasPrefix(reply, "ERR ") && ctx.Err() == nil && (rt.link.reach.epochNow() != epoch || rt.pic.dialFailed) {
		// This picture found it down. Only a PC it could not connect to
		// may be asleep: a link lost in the middle of a picture is a
		// network's fault, and waiting up to wait_s for a wake here would
		// hold text that long (the next picture wakes a PC still down).
		if rt.pic.dialFailed && rt.wake(ctx, st) {
			return rt.encodeRemote(ctx, img, out)
		}
		return rt.unreachable(ctx, st, img, out, strings.TrimPrefix(reply, "ERR "))
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
func (rt *router) unreachable(ctx context.Context, st *settings.Settings, img, out, why string) string {
	if !FallbackOn(st) {
		return "ERR " + why
	}
	if st.LocalEncoder == "" {
		return "ERR " + why + " (the fallback to this PC's CPU is on, but this PC's strata-vision is not recorded in the companion settings: run the setup again)"
	}
	rt.pic.where = events.WhereFallbackCPU
	if rt.link.reach.noteFallback() {
		rt.out.emit("pictures are read on this PC's CPU while the second PC cannot be reached: "+why,
			events.VisionFallbackDetails{RelayMark: relayMark, Host: rt.link.host()})
	}
	return rt.encodeLocal(ctx, st, img, out, events.WhereFallbackCPU)
}

// targetKey is what makes a second PC another one (the idle stop is not:
// it is applied to the running agent).
func targetKey(rm settings.Remote) string {
	d := remote.RemoteDevice(rm)
	return fmt.Sprintf("%q %d %q %q %q %q %q %q %v %d %d %d", rm.Host, rm.Port, rm.User, rm.HostKey, rm.KeyFile, rm.RemoteDir, rm.OS, rm.EncoderPath,
		d.GPU, d.CUDADevice, d.MaxTokens, d.Threads)
}

// useTarget points the relay at the settings' second PC; when it is another
// PC than before, the old session and connection are closed.
func (rt *router) useTarget(rm settings.Remote) error {
	rt.link.reach.setWakeOn(rm.Wake != nil && rm.Wake.Enabled && rm.MAC != "")
	if rt.opt.Target == nil {
		return nil
	}
	key := targetKey(rm)
	if key == rt.targetKey {
		rt.link.setIdle(rm.IdleStopS)
		return rt.targetErr
	}
	t := rt.opt.Target(rm)
	if rt.targetKey != "" {
		rt.link.forget()
		rt.wokeAt = time.Time{}
	}
	rt.link.use(t, rm.IdleStopS)
	rt.targetKey, rt.device, rt.startMS, rt.targetErr = key, t.Device, rm.EncoderStartMS, t.Err
	return t.Err
}

// start looks at the settings once READY is out: with pictures on the second
// PC, it connects in the background, so the first picture finds the
// connection open, or knows at once that the PC is down.
func (rt *router) start() {
	if rt.opt.Settings == nil {
		return
	}
	st, err := rt.opt.Settings()
	if err != nil || st.Remote == nil || st.Remote.Host == "" {
		return
	}
	if st.Vision != settings.PlacementRemote && st.Vision != "" {
		return
	}
	if st.Remote.Check() != nil || rt.useTarget(*st.Remote) != nil {
		return // the first picture says why; nothing is dialed from such a record
	}
	rt.link.ensureRetry(true)
}

// wake sends the Wake-on-LAN packet (once per outage) and waits up to the
// configured time for the second PC's ssh; true when it answered.
func (rt *router) wake(ctx context.Context, st *settings.Settings) bool {
	rm := st.Remote
	if rm.Wake == nil || !rm.Wake.Enabled || rm.MAC == "" {
		return false
	}
	wait := time.Duration(rm.Wake.WaitS) * time.Second
	if wait <= 0 {
		wait = bounds.WakeWait
	}
	if !rt.wokeAt.IsZero() && time.Since(rt.wokeAt) < wait+bounds.WakeAgain {
		return false // woken lately and still down: do not hold every picture
	}
	rt.wokeAt = time.Now()
	bcast, port := rm.Wake.Broadcast, rm.Wake.Port
	if bcast == "" {
		bcast = wol.DefaultBroadcast
	}
	if port <= 0 {
		port = wol.DefaultPort
	}
	send := rt.opt.Wake
	if send == nil {
		send = wol.Send
	}
	details := events.RemoteWakeDetails{RelayMark: relayMark, Host: rt.link.host(), MAC: rm.MAC, Broadcast: bcast, Port: port, WaitS: int(wait / time.Second)}
	yes, no := true, false
	if err := send(rm.MAC, bcast, port); err != nil {
		details.OK = &no
		rt.out.emit("could not send the Wake-on-LAN packet: "+err.Error(), details)
		return false
	}
	rt.out.emit("sent a Wake-on-LAN packet to second PC "+rt.link.host(), details)
	t0 := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(bounds.WakeKick)
	defer tick.Stop()
	rt.link.ensureRetry(true)
	for {
		if down, _ := rt.link.reach.isDown(); !down {
			rt.out.emit("second PC "+rt.link.host()+" woke", events.RemoteWakeDetails{RelayMark: relayMark, Host: rt.link.host(), OK: &yes, WokeMS: time.Since(t0).Milliseconds()})
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			rt.out.emit(fmt.Sprintf("second PC %s did not answer within %s of the wake", rt.link.host(), wait),
				events.RemoteWakeDetails{RelayMark: relayMark, Host: rt.link.host(), OK: &no, WaitS: int(wait / time.Second)})
			return false
		case <-tick.C:
			rt.link.reach.kickRetry()
		}
	}
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

// okFields reads the tokens and the encode time of "OK n nx ny ms".
func okFields(line string) (tokens, encodeMS int) {
	f := strings.Fields(line)
	if len(f) >= 5 {
		tokens, _ = strconv.Atoi(f[1])
		encodeMS, _ = strconv.Atoi(f[4])
	}
	return tokens, encodeMS
}
