package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
//   - the link probe's `<agent> probe`, `sink` and `source N`
//     (gateLinkProbe): facts about this PC and the link's speed, no program
//     or file of the caller's choosing;
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
// Anything else, a shell included, is refused with a sentence and exit 126.
// run executes an allowed agent command line (argv without the program).
func Gate(args []string, original string, run func(argv []string) int, stderr io.Writer) int {
	var allow []string
	var pins gatePins
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--allow" && i+1 < len(args):
			i++
			allow = append(allow, strings.Split(args[i], ",")...)
		case strings.HasPrefix(args[i], "--allow="):
			allow = append(allow, strings.Split(strings.TrimPrefix(args[i], "--allow="), ",")...)
		case pins.flag(args, &i):
		default:
			fmt.Fprintf(stderr, "strata-vision-relay gate: unknown argument %q\n", args[i])
			return 2
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay gate: cannot find its own program:", err)
		return 1
	}
	if s, err := filepath.EvalSymlinks(self); err == nil {
		self = s
	}
	pins.allow = allow
	argv, err := gateCheckWith(original, self, pins)
	if err != nil {
		fmt.Fprintf(stderr, "this key only runs the Strata Companion agent: %v (asked for: %q)\n", err, clipCmd(original))
		return 126
	}
	if argv[0] == "kill" {
		pid, _ := strconv.Atoi(argv[1])
		if err := killAgent(pid, self); err != nil {
			fmt.Fprintln(stderr, "strata-vision-relay gate:", err)
			return 1
		}
		return 0
	}
	if argv[0] == "unpair" {
		return gateUnpair(pins.keys, self, stderr)
	}
	return run(argv)
}

// gateCheck decides what the gate runs for original: the agent's argv
// (["agent", ...], ["version"]) or ["kill", pid]; an error refuses it.
func gateCheck(original, self string, allow []string) ([]string, error) {
	return gateCheckWith(original, self, gatePins{allow: allow})
}

// gateCheckWith is gateCheck with everything pinned at pairing.
func gateCheckWith(original, self string, pins gatePins) ([]string, error) {
	allow := pins.allow
	argv, err := splitCommand(original)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, errors.New("a login shell is not allowed")
	}
	switch {
	case len(argv) == 3 && argv[0] == "kill" && argv[1] == "-KILL":
		return killArgv(argv[2])
	case len(argv) == 5 && strings.EqualFold(argv[0], "taskkill") && strings.EqualFold(argv[1], "/F") && strings.EqualFold(argv[2], "/T") && strings.EqualFold(argv[3], "/PID"):
		return killArgv(argv[4])
	}
	if !strings.EqualFold(baseAny(argv[0]), filepath.Base(self)) {
		return nil, fmt.Errorf("%s is not the agent", argv[0])
	}
	if len(argv) == 2 && argv[1] == "version" {
		return []string{"version"}, nil
	}
	if len(argv) == 2 && argv[1] == "unpair" {
		return []string{"unpair"}, nil
	}
	if len(argv) < 2 || argv[1] != "agent" {
		if out, ok, err := gateLinkProbe(argv[1:], filepath.Dir(self), pins.encoder); ok {
			return out, err
		}
		return nil, errors.New("only its agent, version and the stop of a hung agent are allowed")
	}
	dir := filepath.Dir(self)
	out := []string{"agent"}
	rest := argv[2:]
	for i := 0; i < len(rest); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(rest[i], "-"), "=")
		if !strings.HasPrefix(rest[i], "-") {
			return nil, fmt.Errorf("unexpected argument %q", rest[i])
		}
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(rest) {
				return "", fmt.Errorf("--%s needs a value", name)
			}
			i++
			return rest[i], nil
		}
		switch name {
		case "gpu":
			out = append(out, "--gpu")
		case "threads", "max-tokens", "idle-stop":
			v, err := next()
			if err != nil {
				return nil, err
			}
			if n, err := strconv.Atoi(v); err != nil || n < 0 {
				return nil, fmt.Errorf("--%s %q is not a count", name, v)
			}
			out = append(out, "--"+name, v)
		case "encoder", "mmproj", "model":
			v, err := next()
			if err != nil {
				return nil, err
			}
			p := v
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			if name == "encoder" && pins.isEncoder(p) {
				out = append(out, "--encoder", filepath.Clean(p))
				continue
			}
			if !inside(dir, p) {
				return nil, fmt.Errorf("--%s %s is outside the agent's folder %s", name, v, dir)
			}
			out = append(out, "--"+name, filepath.Clean(p))
		case "install-sha256":
			v, err := next()
			if err != nil {
				return nil, err
			}
			for _, sum := range strings.Split(v, ",") {
				if !contains(allow, sum) {
					return nil, fmt.Errorf("the program with sha256 %s was not allowed at pairing; pair the second PC again to install another build", sum)
				}
			}
			out = append(out, "--install-sha256", v)
		default:
			return nil, fmt.Errorf("--%s is not allowed", name)
		}
	}
	return out, nil
}

func killArgv(s string) ([]string, error) {
	if pid, err := strconv.Atoi(s); err != nil || pid <= 0 || strconv.Itoa(pid) != s {
		return nil, fmt.Errorf("%q is not a process id", s)
	}
	return []string{"kill", s}, nil
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v != "" && strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

func baseAny(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

func clipCmd(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
