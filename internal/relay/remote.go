package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/framing/bounds"
)

// A picture on the second PC (the router's): sent to the agent over the
// link, waited for under a bound that follows what the agent says it does,
// given up at once on the link's verdict (liveness.go).

// encodeRemote reads one picture on the second PC and returns the reply line
// ("OK ..." or "ERR ...").
func (rt *router) encodeRemote(ctx context.Context, img, out string) string {
	t0 := time.Now()
	pic, refused := openPicture(img)
	if refused != "" {
		return refused
	}
	defer pic.Close()
	var picSize int
	if st, err := pic.Stat(); err == nil {
		picSize = int(st.Size())
	}
	rt.pic.host = rt.link.host()
	sess, err := rt.link.session(ctx)
	if err != nil {
		var de *dialError
		if errors.As(err, &de) {
			rt.pic.dialFailed = true
		}
		return "ERR " + err.Error()
	}
	rt.nextID++
	id := rt.nextID
	sess.takeWoke() // a wake reported before this picture is not its wake
	sess.expect(id, out)
	defer sess.expect(0, "")
	// From here the link is checked every bounds.KeepalivePicture, and a
	// silence is judged every bounds.Check (liveness.go).
	lc, conn := rt.link.beginPicture()
	defer rt.link.endPicture()
	sess.phase.Store(phaseUpload)
	sess.wrote.Store(time.Now().UnixNano()) // the agent's silence counts from the picture's start
	stopWatch := rt.link.watchSend(sess, lc, conn)
	refused, err = sendPicture(ctx, sess.fw, id, pic)
	switch v, quiet := stopWatch(); v {
	case linkLost:
		return rt.link.linkGone(sess, quiet)
	case agentHung:
		rt.link.endHungAgent(sess)
		return fmt.Sprintf("ERR the agent on second PC %s stopped taking the picture (nothing from it for %s, though its link answers); it was ended, the next picture starts it again%s", rt.link.host(), quiet.Round(100*time.Millisecond), unavailable)
	}
	if err != nil {
		return "ERR " + rt.link.lostReason(sess, err)
	} else if refused != "" {
		return refused
	}
	if sess.info.BeatMS <= 0 {
		// An older agent says nothing more: it has it. A newer one is in
		// the upload until its first "starting" or "encoding" beat (on a
		// slow link the picture may drain for seconds after the write).
		sess.phase.CompareAndSwap(phaseUpload, phaseEncoding)
	}
	// The bound follows what the agent says it does (its Beat frames): a
	// start (a GPU's warm-up) may take what prepare measured it to take, a
	// picture what the last pictures took; and an agent that says nothing
	// for silenceBound (stopped, frozen, or its link gone) is given up at
	// once, whatever the bound.
	phase := framing.PhaseEncoding
	sawEncoding := false
	bound := rt.pictureBound(phase, picSize, sess.info.BeatMS > 0)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	// The agent's silence (an agent that sends Beats) and the link's (any
	// agent) are judged every bounds.Check.
	silence := time.NewTicker(bounds.Check)
	defer silence.Stop()
	for {
		select {
		case <-ctx.Done():
			return "ERR the relay is stopping"
		case <-silence.C:
			switch v, quiet := rt.link.judge(sess, lc, time.Now()); v {
			case linkLost:
				return rt.link.linkGone(sess, quiet)
			case agentHung:
				rt.link.endHungAgent(sess) // stopped or frozen: leave nothing running there
				return fmt.Sprintf("ERR the agent on second PC %s stopped answering (nothing from it for %s while it was %s the picture, though its link answers); it was ended, the next picture starts it again%s",
					rt.link.host(), quiet.Round(100*time.Millisecond), hungWords[sess.phase.Load()], unavailable)
			}
		case b := <-sess.beats:
			if b.Phase == framing.PhaseReceiving {
				continue // the upload's beats: heard, no phase of the picture's
			}
			// id 0: the keep-running agent's warm-up at its start.
			// A picture goes from starting to encoding, never back: a
			// "starting" beat after an "encoding" one is a late beat of
			// the agent's (its beats are not waited for when a phase ends).
			late := b.Phase == framing.PhaseStarting && sawEncoding
			if b.ID == id && b.Phase == framing.PhaseEncoding {
				sawEncoding = true
			}
			if (b.ID != id && b.ID != 0) || late {
				continue
			}
			ph := phaseEncoding
			if b.Phase == framing.PhaseStarting {
				ph = phaseStarting
			}
			if cur := sess.phase.Load(); cur == phaseUpload || cur == phaseStarting || cur == phaseEncoding {
				sess.phase.CompareAndSwap(cur, ph) // not once the result comes (phaseDownload)
			}
			if b.Phase != phase {
				phase = b.Phase
				bound = rt.pictureBound(phase, picSize, true)
				timer.Reset(bound)
			}
		case <-timer.C:
			rt.link.endHungAgent(sess) // it may be hung: leave nothing running there
			if phase == framing.PhaseStarting {
				return fmt.Sprintf("ERR the encoder on second PC %s did not start within %s; pictures are unavailable for now, text still works", rt.link.host(), bound.Round(100*time.Millisecond))
			}
			return fmt.Sprintf("ERR second PC %s gave no result within %s (pictures took %s lately); pictures are unavailable for now, text still works", rt.link.host(), bound.Round(100*time.Millisecond), rt.times.median().Round(time.Millisecond))
		case <-sess.done:
			return "ERR " + rt.link.lostReason(sess, nil)
		case f := <-sess.replies:
			switch f.t {
			case framing.Result:
				if f.id != id {
					if f.tmp != "" {
						os.Remove(f.tmp)
					}
					continue // a reply to an abandoned request
				}
				if f.tmpErr != nil {
					return "ERR " + f.tmpErr.Error()
				}
				if err := checkResult(f.line, f.tmp, rt.opt.NEmbd); err != nil {
					os.Remove(f.tmp)
					rt.out.logf("refused a result from %s: %v", rt.link.host(), err)
					return "ERR " + oneLine(err.Error())
				}
				// The .sve is complete in its temporary file: a rename
				// makes it appear whole. Renaming over an existing file
				// makes ext4 (auto_da_alloc) write the new one to disk
				// inside rename(2), ~10 ms for a 10 MB .sve (bench/relay,
				// the same picture's name twice); a cached result need not
				// be on disk, so an old .sve of that name goes first
				// (Strata reads the file only after the OK line).
				if st, err := os.Lstat(out); err == nil && st.Mode().IsRegular() {
					os.Remove(out)
				}
				if err := os.Rename(f.tmp, out); err != nil {
					os.Remove(f.tmp)
					return "ERR cannot write the result " + out + ": " + errText(err)
				}
				rt.times.add(time.Since(t0), picSize+int(fileSize(out)))
				rt.reportPicture(sess, f.line)
				return f.line
			case framing.Error:
				rid, msg, _ := framing.SplitID(f.p)
				if rid != id {
					continue
				}
				return "ERR " + oneLine(string(msg))
			}
		}
	}
}

// reportPicture notes what the encoder said of a picture (its outcome event
// is Encode's) and reports a wake it cost.
func (rt *router) reportPicture(sess *agentSession, okLine string) {
	tokens, encMS := okFields(okLine) // OK n nx ny ms
	rt.pic.tokens, rt.pic.encodeMS = tokens, encMS
	if w := sess.takeWoke(); w != nil {
		rt.out.emit("", events.EncoderWokeDetails{RelayMark: relayMark, StartMS: w.StartMS, EncodeMS: int64(encMS), Where: events.WhereRemote, Host: rt.link.host()})
		rt.out.logf("the encoder on %s woke: start %d ms, encode %d ms", rt.link.host(), w.StartMS, encMS)
	}
}

// pictureBound is how long a picture of size bytes may take in phase (the
// agent's last Beat's; framing.PhaseEncoding before one): a start
// startBound; else, until minSamples pictures were timed, firstBound for an
// agent that beats; else what the last pictures took.
func (rt *router) pictureBound(phase string, size int, beats bool) time.Duration {
	if phase == framing.PhaseStarting {
		return rt.startBound()
	}
	if beats && rt.times.count() < minSamples {
		return rt.firstBound()
	}
	return rt.times.bound(size, rt.opt.RequestTimeout)
}

// firstBound bounds a picture before minSamples were timed: a GPU reads one
// in seconds (docs/strata.md: 1.6 s at 1024 tokens), a CPU in tens of seconds.
func (rt *router) firstBound() time.Duration {
	if rt.device.GPU {
		return bounds.FirstGPUPicture
	}
	return rt.opt.RequestTimeout
}

// startBound bounds the encoder's start on the second PC (a GPU's warm-up):
// four times what prepare measured, at least 30 s; unknown, the agent's own
// bound (Strata's STRATA_VISION_READY_S, 300 s).
func (rt *router) startBound() time.Duration {
	if ms := rt.startMS; ms > 0 {
		return min(max(bounds.EncoderStartFactor*time.Duration(ms)*time.Millisecond, bounds.EncoderStartMin), bounds.EncoderStart)
	}
	return bounds.EncoderStart
}
