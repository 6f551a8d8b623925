package agent

import (
	"github.com/strata-companion/companion/internal/agentcmd"

	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// gatePins are what pairing pinned in the forced command, beside --allow.
type gatePins struct {
	allow []string
	// encoder is an encoder outside the agent's folder (absolute) that
	// `agent --encoder` may name: a Strata engine installed on that PC.
	encoder string
	// keys is the authorized_keys file pairing wrote; `unpair` edits it.
	keys string
}

// gateUnpair is `<agent> unpair` through the gate: it removes, from the
// authorized_keys file pinned at pairing (keys), the lines whose forced
// command is this gate (this agent's own program, then `gate`), so the
// companion's key can take itself off the second PC. Every other line stays
// byte for byte; the file is replaced as `authorized-keys remove` replaces
// it (same permissions, same rename).
func gateUnpair(keys, self string, stderr io.Writer) int {
	if keys == "" {
		fmt.Fprintln(stderr, "this key was paired without naming its authorized_keys file (--keys), so it cannot remove itself; remove the companion's line with your own login")
		return 1
	}
	old, err := os.ReadFile(keys)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "reading %s: %v\n", keys, err)
		return 1
	}
	out := filterLines(old, func(line string) bool { return isGateLine(line, self) })
	if bytes.Equal(out, old) {
		fmt.Fprintf(stderr, "%s holds no line whose forced command is this agent's gate\n", keys)
		return 0
	}
	if err := rewriteKeys(keys, out, keysFileIsAdmins(keys)); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "removed the companion's key from %s\n", keys)
	return 0
}

// isGateLine: line's forced command (command="...") runs self with `gate`.
func isGateLine(line, self string) bool {
	cmd, ok := forcedCommand(line)
	if !ok {
		return false
	}
	argv, err := agentcmd.Split(runtime.GOOS, cmd)
	if err != nil || len(argv) < 2 || argv[1] != string(agentcmd.VerbGate) {
		return false
	}
	p := argv[0]
	if s, err := filepath.EvalSymlinks(p); err == nil {
		p = s
	}
	if runtime.GOOS == "windows" {
		return strings.EqualFold(filepath.Clean(p), filepath.Clean(self))
	}
	return filepath.Clean(p) == filepath.Clean(self)
}

// forcedCommand is the command="..." option of an authorized_keys line
// (sshd's syntax: options before the key type, comma-separated, a quoted
// value escapes " as \").
func forcedCommand(line string) (string, bool) {
	s := strings.TrimLeft(line, " \t")
	if s == "" || s[0] == '#' {
		return "", false
	}
	for {
		// One option, up to a comma or a blank outside quotes.
		var opt strings.Builder
		quoted, i := false, 0
		var val strings.Builder
		inVal := false
		for ; i < len(s); i++ {
			c := s[i]
			if quoted {
				if c == '\\' && i+1 < len(s) && s[i+1] == '"' {
					val.WriteByte('"')
					i++
					continue
				}
				if c == '"' {
					quoted = false
					continue
				}
				val.WriteByte(c)
				continue
			}
			if c == '"' {
				quoted, inVal = true, true
				continue
			}
			if c == ',' || c == ' ' || c == '\t' {
				break
			}
			opt.WriteByte(c)
		}
		if quoted {
			return "", false
		}
		if strings.EqualFold(opt.String(), "command=") && inVal {
			return val.String(), true
		}
		if i >= len(s) || s[i] != ',' {
			return "", false // the options end here (or there were none)
		}
		s = s[i+1:]
	}
}
