package agent

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// gateLinkProbe is the gate's rule for the link probe's subcommands (argv
// without the agent's program): `probe` with --file names inside the agent's
// folder and an --encoder there or the one pinned at pairing (pinned, ""
// none), `sink`, and `source N` with N at most 1 GiB. ok false: argv is not
// one of them.
func gateLinkProbe(argv []string, dir, pinned string) (out []string, ok bool, err error) {
	if len(argv) == 0 {
		return nil, false, nil
	}
	switch argv[0] {
	case "probe":
		a, err := ParseProbeArgs(argv[1:], dir)
		if err != nil {
			return nil, true, err
		}
		out = []string{"probe"}
		if a.Encoder != "" {
			p := a.Encoder
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			switch {
			case hasDotDot(a.Encoder):
				return nil, true, fmt.Errorf("probe: --encoder %q steps out with \"..\"", a.Encoder)
			case inside(dir, p), samePinned(p, pinned):
			default:
				return nil, true, fmt.Errorf("probe: --encoder %s is outside the agent's folder %s and not the encoder pinned at pairing", a.Encoder, dir)
			}
			out = append(out, "--encoder", filepath.Clean(p))
		}
		for _, f := range a.Files {
			out = append(out, "--file", f)
		}
		return out, true, nil
	case "sink":
		if len(argv) != 1 {
			return nil, true, fmt.Errorf("sink takes no arguments")
		}
		return []string{"sink"}, true, nil
	case "source":
		n, err := ParseSourceArgs(argv[1:])
		if err != nil {
			return nil, true, err
		}
		return []string{"source", strconv.FormatInt(n, 10)}, true, nil
	}
	return nil, false, nil
}

// samePinned reports whether p is the absolute encoder path pinned at
// pairing (case-insensitive on Windows, as its file names are).
func samePinned(p, pinned string) bool {
	if pinned == "" || !filepath.IsAbs(pinned) {
		return false
	}
	a, b := filepath.Clean(p), filepath.Clean(pinned)
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
