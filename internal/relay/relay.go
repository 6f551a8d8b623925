// Package relay is the Strata-facing side of strata-vision-relay: it speaks
// Strata's encoder line protocol (READY, ENC, OK/ERR, QUIT) on stdin/stdout
// and does each picture's work on the second PC through one kept-alive ssh
// connection to the agent (internal/agent), with frames (internal/framing).
//
// What it promises Strata: READY at once, whatever the second PC does; one
// reply line per request within a bounded time, never a hang; an ERR that a
// person can act on; a .sve that is complete or absent; the next picture after
// the second PC comes back works without restarting anything.
//
// Every timing bound (connect, keepalives, the lost link, the hung agent, a
// picture, the stop) is in one table, internal/relay/bounds, with the reason
// for each value: change a bound there, nowhere else.
//
// By concern (docs/relay.md, "Inside the relay"):
//   - relay.go: Relay, the line protocol loop (Run), its start and stop;
//   - route.go, remote.go, local.go, times.go: a picture's way (router):
//     which placement reads it, the fallback to this PC's CPU, the wake, the
//     picture on the second PC and on this PC's CPU, and their bounds;
//   - link.go, reach.go, liveness.go, session.go: the link to the second PC
//     (link): the kept ssh connection, its keepalives and monitor, the
//     background retry while it is down, the verdicts on a silence (a lost
//     link, a hung agent), and the agent session on it;
//   - output.go: what the relay says (output): the developer log, the
//     events for the service, the notes for a person;
//   - internal/relay/prepare: preparing the second PC (Prepare, uploads),
//     which shares nothing with a running Relay;
//   - internal/relay/remote: the second PC as both reach it: the ssh
//     transport (Conn), the agent's command line, its encoder's device;
//   - reexport.go: the names of those two packages, as relay.X.
package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/relay/bounds"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// Bounds: every value and why it is what it is are in internal/relay/bounds
// (docs/relay.md, "Bounds", gives the user's view).
const (
	// DefaultConnectTimeout bounds reaching the second PC: TCP connect plus
	// the ssh handshake; also how long a kept connection may go without a
	// word between pictures before it is declared dead (bounds.IdleLinkLost).
	DefaultConnectTimeout = bounds.Connect
	// DefaultHelloTimeout bounds the agent's start on the second PC.
	DefaultHelloTimeout = bounds.AgentStart
	// DefaultRequestTimeout bounds a picture until a few were timed (the
	// agent's own bound for one encode); then the bound follows what
	// pictures take (pictureTimes.bound).
	DefaultRequestTimeout = bounds.Encode
)

// Options configure a Relay.
type Options struct {
	// Host names the second PC in messages ("second PC 192.168.1.20").
	Host string
	Dial remote.Dialer
	// AgentCommand starts the agent on the second PC (AgentArgs.Command).
	AgentCommand string
	// NEmbd is what READY says.
	NEmbd int
	// ReportNEmbd hands an n_embd the second PC's encoder reported to the
	// service (which records it in the settings); optional, never blocks.
	ReportNEmbd func(int)
	// Settings returns the companion settings as they are now; it is called
	// for every picture (SettingsFile.Get: one stat, a reread on change).
	// Nil: every picture goes to the second PC of Host, Dial, AgentCommand.
	Settings func() (*settings.Settings, error)
	// Target turns the settings' second PC into where to dial and what to
	// run there (nil: only Host/Dial/AgentCommand; see main's target).
	Target func(settings.Remote) Target
	// LocalMmproj and LocalModel are what Strata passed (--mmproj, --model):
	// pictures read on this PC's CPU use the Q8_0 projector beside the
	// mmproj when there is one (CPUProjector), at Strata's own CPU settings
	// (LocalCPUDevice); never --gpu.
	LocalMmproj, LocalModel string
	// ExtraArgs are encoder arguments Strata passed that go on to every
	// encoder the relay starts (--flash-attn, --min-tokens, unknown ones).
	ExtraArgs []string
	// Notes receives a line for a person about an encoder argument that was
	// dropped (nil: discarded); written to Strata's engine log by main.
	Notes func(string)
	// ArgsProblem, when set, answers every picture: what was wrong with
	// Strata's arguments (the relay never exits on them).
	ArgsProblem string
	// Wake sends the Wake-on-LAN packet for the second PC (nil: wol.Send).
	Wake func(mac, broadcast string, port int) error
	// Report receives every event, for the service (ServiceReporter.Event);
	// it must not block. Nil: events are dropped.
	Report func(events.Event)
	// Log receives lines for a developer (tests); nil: discarded. Nothing
	// the relay does after READY is written to Stderr.
	Log io.Writer

	ConnectTimeout time.Duration
	HelloTimeout   time.Duration
	// RequestTimeout is the bound for a picture before any picture has
	// been timed; after that the bound follows what pictures take (bound).
	RequestTimeout time.Duration
	// RetryEvery is the pause between the background connection attempts
	// while the second PC is known to be down (default 2 s).
	RetryEvery time.Duration
	// SlowFailure: a dial that failed after at least this long makes the
	// second PC known down (default 1 s; a quicker failure is retried by
	// the next picture). Negative: every failure.
	SlowFailure time.Duration
	// LinkLost: while a picture is in flight, nothing from the second PC
	// for this long gives the link up (default bounds.LinkLost, 3 s).
	LinkLost time.Duration
}

// Target is the second PC as the relay reaches it.
type Target struct {
	Host         string
	Dial         remote.Dialer
	AgentCommand string
	// IdleStopS is sent to a running agent when it changes (SetIdle).
	IdleStopS int
	// Err says why no agent command could be built for this second PC
	// (AgentArgs.Command); pictures answer it as ERR.
	Err error
	// OS is the system AgentCommand was quoted for; an agent whose own
	// hello names another kind (Windows against sh) is not used.
	OS string
	// Device is what its encoder was told to use (RemoteDevice).
	Device remote.Device
}

// Relay serves one Strata encoder session. It is three parts, each owning
// its state: the router (route.go: a picture's way, on the goroutine that
// reads the current picture), the link (link.go: the second PC's connection,
// its monitor and background retry, the agent session) and the output
// (output.go: logs, events, notes). Relay itself only runs the line protocol
// and starts and stops them.
type Relay struct {
	opt   Options
	out   *output
	link  *link
	route *router
}

// New makes a relay; Run serves it.
func New(opt Options) *Relay {
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = DefaultConnectTimeout
	}
	if opt.HelloTimeout <= 0 {
		opt.HelloTimeout = DefaultHelloTimeout
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	if opt.RetryEvery <= 0 {
		opt.RetryEvery = bounds.Retry
	}
	if opt.SlowFailure == 0 {
		opt.SlowFailure = bounds.SlowFailure
	}
	if opt.LinkLost <= 0 {
		opt.LinkLost = bounds.LinkLost
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	r := &Relay{opt: opt}
	r.out = &output{log: opt.Log, report: opt.Report, notes: opt.Notes, reportNEmbd: opt.ReportNEmbd, nEmbd: opt.NEmbd}
	r.link = newLink(linkConfig{
		connect: opt.ConnectTimeout, hello: opt.HelloTimeout, linkLost: opt.LinkLost,
		retryEvery: opt.RetryEvery, slowFailure: opt.SlowFailure,
	}, linkTarget{host: opt.Host, dial: opt.Dial, agentCommand: opt.AgentCommand}, r.out)
	r.route = &router{opt: &r.opt, out: r.out, link: r.link}
	return r
}

// Run prints READY, then answers each request line until QUIT, the end of
// in, or ctx; it closes everything (the agent, the encoder it runs, the
// connection, the local encoder) before returning. Every request line gets
// exactly one reply line, QUIT excepted (the encoder protocol has none). A
// picture in flight is given up, with its ERR line, when QUIT, the end of in
// or ctx comes: Strata never waits on it to stop the relay.
func (r *Relay) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	reply := func(s string) error {
		w.WriteString(s)
		w.WriteByte('\n')
		return w.Flush()
	}
	defer r.Close()
	if err := reply("READY " + strconv.Itoa(r.opt.NEmbd)); err != nil {
		return err
	}
	r.route.start()
	lines := make(chan inLine)
	readErr := make(chan error, 1)
	// This reader is not in r.wg: a read cannot be interrupted, and Close
	// must not wait for Strata to close our stdin (the process exits anyway).
	go readLines(ctx, in, MaxLine, lines, readErr)
	var pending []inLine // lines that came while a picture was read
	for {
		var l inLine
		if len(pending) > 0 {
			l, pending = pending[0], pending[1:]
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-readErr:
				return err // end of input: Strata is gone
			case l = <-lines:
			}
		}
		if l.tooLong {
			if err := reply(fmt.Sprintf("ERR the request line is over %d KiB; expected ENC <image> <output>", MaxLine>>10)); err != nil {
				return err
			}
			continue
		}
		line := strings.TrimRight(l.s, "\r")
		switch {
		case line == "QUIT":
			return nil
		case strings.HasPrefix(line, "ENC "):
			img, sve, ok := splitENC(line[4:])
			if !ok {
				if err := reply("ERR the request " + strconv.Quote(line) + " is not ENC <image> <output>"); err != nil {
					return err
				}
				continue
			}
			pctx, cancel := context.WithCancel(ctx)
			res := make(chan string, 1)
			go func() { res <- replyLine(r.Encode(pctx, img, sve)) }()
			var stop error
			quit := false
		wait:
			for {
				select {
				case rep := <-res:
					cancel()
					if err := reply(rep); err != nil {
						return err
					}
					break wait
				case nl := <-lines:
					if nl.s == "QUIT" || nl.s == "QUIT\r" {
						quit = true
					} else {
						pending = append(pending, nl)
						continue
					}
				case stop = <-readErr:
					quit = true
				case <-ctx.Done():
					stop, quit = ctx.Err(), true
				}
				if quit {
					// Give the picture up; lines that came after it (Strata
					// sends one at a time, so only a confused client) get
					// one reply each too. Its session is closed first: a
					// write into a dead link's full window returns then.
					cancel()
					select {
					case rep := <-res:
						reply(rep)
					case <-time.After(bounds.StuckPicture):
						// Stuck on the link (a write into a dead link's
						// full window): closing the connection ends it.
						r.link.abort()
						reply(<-res)
					}
					for range pending {
						reply("ERR the relay is stopping")
					}
					return stop
				}
			}
		case strings.TrimSpace(line) == "":
			if err := reply("ERR an empty request line; expected ENC <image> <output>"); err != nil {
				return err
			}
		default:
			if err := reply("ERR unknown request " + strconv.Quote(line)); err != nil {
				return err
			}
		}
	}
}

// splitENC splits "<image> <output>". Strata does not quote its paths, and a
// Windows temp folder may hold spaces ("C:\Users\Ana Lu\..."): the image
// always ends in .img and the output in .sve, so split there first.
func splitENC(rest string) (img, out string, ok bool) {
	rest = strings.TrimSpace(rest)
	if i := strings.Index(rest, ".img "); i >= 0 && strings.HasSuffix(rest, ".sve") {
		return rest[:i+4], strings.TrimSpace(rest[i+5:]), true
	}
	f := strings.Fields(rest)
	if len(f) != 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// Encode reads one picture where the settings say now and returns the reply
// line ("OK ..." or "ERR ..."): the second PC, this PC's CPU, or nowhere.
// The settings are looked at for every picture (Options.Settings), so a
// change takes effect on the next picture with no restart of anything.
// Every picture's outcome is one vision.picture event: where it was read
// (or meant to be), how long it took, ok or the reason.
func (r *Relay) Encode(ctx context.Context, img, out string) string {
	return r.route.encode(ctx, img, out)
}

// Close ends the agent session (the agent stops its encoder and removes its
// scratch folder when its input ends), then the connection, this PC's
// encoder, and waits for every goroutine the relay started. Bounded
// whatever the link does: a dead connection is closed, not waited on.
func (r *Relay) Close() {
	r.link.close()
	r.route.local.stop(bounds.LocalEncoderQuit)
	r.link.wait()
}

func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(s))
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// unavailable ends every message about an unreachable PC.
const unavailable = "; pictures are unavailable, text still works"
