package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/encoderproc"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/framing/bounds"
	"github.com/strata-companion/companion/internal/settings"
)

// A picture on this PC's CPU (the router's, for the CPU placement and the
// fallback): this PC's strata-vision, kept running between pictures.

// encodeLocal reads one picture with this PC's strata-vision on the CPU,
// kept running between pictures.
func (rt *router) encodeLocal(ctx context.Context, st *settings.Settings, img, out, where string) string {
	if ctx.Err() != nil {
		return "ERR the relay is stopping"
	}
	if st.LocalEncoder == "" {
		return "ERR this PC's strata-vision is not recorded in the companion settings (local_encoder); run the setup again, or choose where pictures are read in the tray"
	}
	d := LocalCPUDevice(st)
	args := []string{"--mmproj", CPUProjector(rt.opt.LocalMmproj), "--model", rt.opt.LocalModel,
		"--threads", strconv.Itoa(d.Threads), "--max-tokens", strconv.Itoa(d.MaxTokens)}
	args = append(args, rt.opt.ExtraArgs...)
	enc, startMS, err := rt.local.get(st.LocalEncoder, args, rt.out.note)
	if err != nil {
		msg := "this PC's encoder " + st.LocalEncoder + " did not start: " + oneLine(err.Error())
		rt.out.emit(msg, events.EncoderFailedDetails{RelayMark: relayMark, Where: where})
		return "ERR " + msg + "; text still works"
	}
	if startMS >= 0 {
		w := enc.Where(false)
		rt.out.reportWhere(where, "", startMS, &w, enc.Args())
	}
	t0 := time.Now()
	bound := rt.ltimes.bound(0, DefaultRequestTimeout)
	line, err := enc.Request("ENC "+img+" "+out, bound, ctx.Done())
	if err != nil {
		tail := enc.Tail()
		rt.local.drop()
		switch {
		case ctx.Err() != nil:
			return "ERR the relay is stopping"
		case errors.Is(err, encoderproc.ErrStopped):
			msg := "this PC's encoder stopped while reading the picture"
			if tail != "" {
				msg += " (" + oneLine(tail) + ")"
			}
			return "ERR " + msg + "; the next picture starts it again"
		}
		return fmt.Sprintf("ERR this PC's encoder gave no result within %s; it was stopped, the next picture starts it again", bound.Round(100*time.Millisecond))
	}
	if strings.HasPrefix(line, "OK ") {
		rt.ltimes.add(time.Since(t0), 0)
		rt.pic.tokens, rt.pic.encodeMS = okFields(line)
	}
	return line
}

// localEncoder is this PC's strata-vision, started on the first picture read
// on the CPU and kept; another path or other arguments start another.
type localEncoder struct {
	mu  sync.Mutex
	enc *encoderproc.Encoder
	key string
}

// get returns the running encoder, starting it when needed (startMS is the
// start's time then, -1 when it was running).
func (l *localEncoder) get(path string, args []string, note func(string)) (*encoderproc.Encoder, int64, error) {
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
	enc, err := encoderproc.Start(path, args, nil, noteWriter(note), bounds.LocalEncoderStart)
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
