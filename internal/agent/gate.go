package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/strata-companion/companion/internal/agentcmd"
	"github.com/strata-companion/companion/internal/framing"
)

// Gate is the forced command of the companion's key on the second PC:
// authorized_keys says command="<agent> gate [--allow SUMS]", so whatever a
// holder of the key asks for, sshd runs this, with the asked-for command in
// SSH_ORIGINAL_COMMAND (original). It allows only the agent's own work:
//
//   - `<agent> agent [flags]`: read pictures, or (no --encoder) receive
//     prepare's uploads and answer stat; every file it names (--encoder,
//     --mmproj, --model) must be in the agent's own folder, --dir and
//     --scratch are refused, and --install-sha256 only with sums pinned at
//     pairing (allow), so no program of the caller's choosing ever runs;
//     Strata's own encoder arguments travel as data (--encoder-args);
//   - the link probe's `<agent> probe`, `sink` and `source N`: facts about
//     this PC and the link's speed, no program or file of the caller's
//     choosing;
//   - `kill -KILL PID` / `taskkill /F /T /PID PID`: the relay's stop of a
//     hung agent, done here, and only for a process that is this agent;
//   - `<agent> version`;
//   - `<agent> unpair`: remove this gate's own lines from the
//     authorized_keys file pinned at pairing (--keys; see gateUnpair).
//
// Pinned at pairing (the forced command's own flags): --allow SUMS (the
// programs prepare may install), --encoder ABSPATH (an encoder outside the
// agent's folder, e.g. a Strata engine installed on that PC), --keys FILE
// (the authorized_keys file pairing wrote).
//
// What the line may hold is agentcmd's one definition (the relay builds
// with it, the agent parses with it); what is admitted is agentcmd.Policy.
// Anything else, a shell included, is refused with framing.GateRefusal and
// exit framing.GateRefusalStatus (126).
// run executes an allowed agent command line (argv without the program).
func Gate(args []string, original string, run func(argv []string) int, stderr io.Writer) int {
	g, err := agentcmd.ParseArgs(append([]string{string(agentcmd.VerbGate)}, args...))
	if err != nil {
		fmt.Fprintf(stderr, "strata-vision-relay gate: %v\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay gate: cannot find its own program:", err)
		return 1
	}
	if s, err := filepath.EvalSymlinks(self); err == nil {
		self = s
	}
	pins := gatePins{allow: g.Gate.Allow, encoder: g.Gate.Encoder, keys: g.Gate.Keys}
	argv, err := gateCheckWith(original, self, pins)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (asked for: %q)\n", framing.GateRefusal, err, clipCmd(original))
		return framing.GateRefusalStatus
	}
	if argv[0] == string(agentcmd.VerbKill) {
		pid, _ := strconv.Atoi(argv[1])
		if err := killAgent(pid, self); err != nil {
			fmt.Fprintln(stderr, "strata-vision-relay gate:", err)
			return 1
		}
		return 0
	}
	if argv[0] == string(agentcmd.VerbUnpair) {
		return gateUnpair(pins.keys, self, stderr)
	}
	return run(argv)
}

// gateCheck decides what the gate runs for original: the agent's argv
// (["agent", ...], ["version"]) or ["kill", pid]; an error refuses it.
func gateCheck(original, self string, allow []string) ([]string, error) {
	return gateCheckWith(original, self, gatePins{allow: allow})
}

// GateCheck is what the gate runs for the command line original asked of
// the agent program self, with pins pinned at pairing: the agent's
// arguments (["agent", ...], ["probe", ...], ["version"]...) or ["kill",
// PID]; an error says why it is refused. (Exported for the contract test
// that crosses the relay, the gate and the agent.)
func GateCheck(original, self string, pins agentcmd.Gate) ([]string, error) {
	return gateCheckWith(original, self, gatePins{allow: pins.Allow, encoder: pins.Encoder, keys: pins.Keys})
}

// gateCheckWith is gateCheck with everything pinned at pairing. The line is
// split and parsed by agentcmd, the one definition the relay built it
// with, and admitted by agentcmd's policy; what runs is the parsed command
// written out again (agentcmd.Command.Args), never the caller's words.
func gateCheckWith(original, self string, pins gatePins) ([]string, error) {
	argv, err := agentcmd.Split(runtime.GOOS, original)
	if err != nil {
		return nil, err
	}
	c, err := agentcmd.Parse(argv)
	if err != nil {
		return nil, err
	}
	policy := agentcmd.Policy{OS: runtime.GOOS, Self: self, Pins: agentcmd.Gate{Allow: pins.allow, Encoder: pins.encoder, Keys: pins.keys}}
	if c, err = policy.Admit(c); err != nil {
		return nil, err
	}
	if c.Verb == agentcmd.VerbKill {
		return []string{string(agentcmd.VerbKill), strconv.Itoa(c.PID)}, nil
	}
	return c.Args(), nil
}

// killAgent ends pid if it runs this agent's program (the relay's stop of a
// hung agent); any other process is refused.
func killAgent(pid int, self string) error {
	if !isAgentProcess(pid, self) {
		return fmt.Errorf("process %d is not this agent; only a hung agent may be stopped", pid)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func clipCmd(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
