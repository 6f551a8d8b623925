// Package bounds is every timing bound of the remote-vision relay
// (internal/relay, Strata's side) and its agent (internal/agent, the second
// PC's side), in one table with the reason for each value.
//
// Why they matter: Strata reads every picture under its request queue, so
// text waits while the relay waits. Each bound below is how long text may
// wait for that reason; docs/relay.md ("Bounds") gives the user's view and
// the measured figures. The relay, the agent and prepare take their values
// from here; a test or a caller may pass shorter ones through their Options.
// It sits beside internal/framing, the protocol whose waits it bounds, so
// both sides of that protocol import it without importing each other.
package bounds

import "time"

// The link: one kept ssh connection to the second PC.
const (
	// Connect bounds reaching the second PC: the TCP connect plus the ssh
	// handshake. A LAN answers in milliseconds; 5 s leaves room for a
	// Windows PC's OpenSSH on a busy Wi-Fi, and a picture for a PC that is
	// off is still answered while the user looks at the screen.
	Connect = 5 * time.Second

	// KeepaliveIdle is how often a kept connection is checked between
	// pictures: one keepalive@openssh.com request (~100 bytes each way).
	// Nobody waits then, so it is sparse (an idle relay's CPU per minute is
	// measured by bench/relay's BenchmarkRelayIdle).
	KeepaliveIdle = 2 * time.Second

	// IdleLinkLost: between pictures, a kept connection from which nothing
	// came for this long (no keepalive answer, no frame) is closed and the
	// second PC is known down, so the next picture is answered at once.
	// Longer than LinkLost: nobody waits, and a Wi-Fi hiccup of a few
	// seconds need not cost a reconnect. The same as Connect: the relay's
	// ConnectTimeout option carries both (a test that shortens one shortens
	// the other).
	IdleLinkLost = Connect

	// KeepalivePicture is how often the link is checked while a picture is
	// in flight: often enough that when the agent falls silent, whether its
	// link still answers (a hung agent) or nothing answers (a lost link) is
	// known before HungAgent has passed.
	KeepalivePicture = time.Second

	// LinkLost: while a picture is in flight, nothing from the second PC
	// for this long (no keepalive answer, no frame, no progress of the
	// upload) means the link is lost. The picture gets its ERR at once and
	// the connection is closed without being waited on (a dead TCP
	// connection holds whatever writes to it). The same as HungAgent: a
	// pulled cable holds text no longer than a frozen agent.
	LinkLost = 3 * time.Second

	// LinkAnswers: a keepalive answered within this long says the link is
	// alive, so an agent silent for HungAgent is hung rather than cut off:
	// KeepalivePicture plus a LAN round trip and one Check of slack.
	LinkAnswers = KeepalivePicture + Check + 250*time.Millisecond

	// Check is how often a picture's wait looks at the agent's and the
	// link's silence: the granularity of HungAgent and LinkLost.
	Check = 250 * time.Millisecond

	// Retry is the pause between background dials while the second PC is
	// known down: a PC back on the network is used within Retry + Connect.
	Retry = 2 * time.Second

	// SlowFailure: a dial that failed after at least this long (no answer)
	// makes the second PC known down; a quicker failure (refused, reset, no
	// route: about a millisecond on a LAN) is simply tried again by the next
	// picture, so an ssh server that is back is used at once.
	SlowFailure = time.Second
)

// The agent on the second PC.
const (
	// Beat is how often the agent sends a Beat frame while it starts its
	// encoder or reads a picture (announced in its Hello as beat_ms): the
	// proof that a busy agent is alive.
	Beat = time.Second

	// HungAgent: an agent that sends Beats and from which nothing came for
	// this long while its link still answers is hung (stopped, frozen): it
	// is killed there and the picture gets its ERR. Three missed beats
	// (HungBeats), so one late beat on a loaded PC is not taken for a hang;
	// an agent that announces a slower beat (its Hello's beat_ms) is given
	// HungBeats of its own beats.
	HungAgent = HungBeats * Beat
	HungBeats = 3

	// AgentStart bounds the agent's start over the kept connection, to its
	// Hello: sshd starting it takes 160-210 ms on the build machine; 10 s
	// leaves room for a slow PC's first start from a cold disk.
	AgentStart = 10 * time.Second

	// Ping is how often the relay pings an agent it keeps (its answer is
	// not needed: the ping keeps the agent's AgentSilence from firing).
	Ping = 10 * time.Second

	// AgentSilence: an agent that heard nothing from the relay for this
	// long (six missed pings) ends itself, its encoder with it: a server PC
	// that died without closing TCP leaves nothing running on the second
	// PC.
	AgentSilence = 60 * time.Second
)

// The encoder (strata-vision), on the second PC or on this PC's CPU.
const (
	// EncoderStart bounds the encoder's start (a GPU's warm-up included)
	// when nothing better is known: Strata's own STRATA_VISION_READY_S. The
	// agent enforces it; the relay uses it until prepare measured a start.
	EncoderStart = 300 * time.Second

	// EncoderStartFactor x the start prepare measured, at least
	// EncoderStartMin and at most EncoderStart, bounds a start the relay
	// waits for (a wake after an idle stop): a measured start of 8 s allows
	// 32 s, room for a loaded PC without waiting Strata's 300 s on a hang.
	EncoderStartFactor = 4
	EncoderStartMin    = 30 * time.Second

	// Encode bounds one picture, enforced by the agent; the relay uses it
	// for a picture until TimedPictures were timed when the second PC reads
	// on its CPU (tens of seconds per picture there), and for an older
	// agent without Beats.
	Encode = 120 * time.Second

	// FirstGPUPicture bounds a picture on a GPU until TimedPictures were
	// timed: a GPU reads one in seconds (1.6 s at 1024 tokens on the
	// reference machine, docs/strata.md).
	FirstGPUPicture = 30 * time.Second

	// TimedPictures, PictureFactor, PictureTransferFactor, PictureFloor:
	// once TimedPictures were timed, a picture may take PictureFactor x the
	// median of the recent ones plus PictureTransferFactor x its transfer at
	// the measured rate, at least PictureFloor (a GPU encoder's wake after
	// an idle stop fits in it).
	TimedPictures         = 3
	PictureFactor         = 4
	PictureTransferFactor = 2
	PictureFloor          = 15 * time.Second

	// LocalEncoderStart bounds this PC's CPU encoder's start (no warm-up
	// on a CPU: it is ready in about a second).
	LocalEncoderStart = 60 * time.Second

	// EncoderQuit is how long an encoder is given to end after QUIT (or
	// the end of its input) before it is killed: the agent's encoder, whose
	// GPU memory goes back to the driver meanwhile.
	EncoderQuit = 5 * time.Second

	// LocalEncoderQuit is the same for this PC's CPU encoder, stopped as
	// soon as pictures leave the CPU (nothing to give back but RAM).
	LocalEncoderQuit = time.Second
)

// Wake-on-LAN.
const (
	// WakeWait is how long a picture waits for a woken second PC's ssh
	// when the settings say nothing (remote.wake.wait_s): a PC resuming
	// from sleep answers in seconds, a cold boot in tens.
	WakeWait = 60 * time.Second

	// WakeKick is how often the background retry is kicked while waiting
	// for a woken PC, so it is used within this long of answering.
	WakeKick = 500 * time.Millisecond

	// WakeAgain: a PC that did not wake is not waited for again until
	// WakeWait + WakeAgain have passed (once per outage, not every picture).
	WakeAgain = 60 * time.Second
)

// Stopping (QUIT, the end of input, SIGTERM) and giving a picture up.
// Strata waits on its encoder's exit, and text with it: everything here is
// bounded whatever the link does, and a dead connection is closed, never
// waited on.
const (
	// AgentEnd is how long an agent whose input was closed is given to end
	// (it stops its encoder and removes its scratch folder), then its kill.
	AgentEnd = 300 * time.Millisecond

	// KillWait is how long a kill of the agent is waited for: the ssh
	// signal's effect, then the kill command run over the connection.
	KillSignal  = 100 * time.Millisecond
	KillCommand = 500 * time.Millisecond
	KillWait    = 300 * time.Millisecond

	// StuckPicture: a picture in flight at QUIT that does not end within
	// this long (a write into a dead link's full window) has its connection
	// closed.
	StuckPicture = 300 * time.Millisecond

	// LostVerdict is how long a picture whose session ended waits for the
	// connection monitor's verdict, so its ERR names the real cause (the
	// link vs. the agent).
	LostVerdict = 200 * time.Millisecond
)

// Reporting events to the companion service (best effort: a report never
// delays a reply to Strata).
const (
	// ReportSend bounds one POST of events to the service (on this PC: it
	// answers in milliseconds, or it is not running).
	ReportSend = 2 * time.Second
	// ReportRetry is the first pause before events are sent again after a
	// failure, doubled each time up to ReportRetryMax (a service that is
	// restarting is back within seconds; one that is stopped is not asked
	// more than once a minute).
	ReportRetry    = 2 * time.Second
	ReportRetryMax = time.Minute
	// ReportFlush is how long the relay, as it exits, waits for its last
	// events to reach the service: Strata waits on its encoder's exit.
	ReportFlush = 300 * time.Millisecond
)

// Preparing the second PC (strata-service remote prepare, the wizard):
// a person watches a progress line, so these are generous.
const (
	// PrepareDial bounds prepare's connect and handshake (the wizard's
	// first contact with a PC that may be busy installing).
	PrepareDial = 10 * time.Second
	// PrepareHello bounds the agent's start in prepare (it may have just
	// been copied there; an antivirus scans it on first start).
	PrepareHello = 15 * time.Second
	// PrepareStatus bounds a status answer.
	PrepareStatus = 30 * time.Second
	// PrepareWake bounds prepare's encoder start: EncoderStart plus
	// room for the answer.
	PrepareWake = EncoderStart + 30*time.Second
	// PrepareStat bounds a file's check there (sha256 of up to a few GB).
	PrepareStat = 5 * time.Minute
	// PreparePut bounds one upload's end (its sha256 checked there).
	PreparePut = 10 * time.Minute
	// PrepareProgress is how often an upload prints its progress line.
	PrepareProgress = time.Second
	// PrepareShellCopy bounds the shell copy's end (`cat` to a .part and
	// `mv`) once the agent's bytes were sent; PrepareStderr, the wait for a
	// failed command's stderr, which says why.
	PrepareShellCopy = 30 * time.Second
	PrepareStderr    = 5 * time.Second
	// PrepareClose bounds a finished session's last stderr lines.
	PrepareClose = 2 * time.Second
)
