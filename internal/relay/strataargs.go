package relay

import (
	"errors"
	"strings"
)

// StrataArgs is what Strata passed to its encoder (the relay).
type StrataArgs struct {
	Mmproj, Model string
	// extra are encoder arguments the relay passes on to the encoders it
	// starts: --flash-attn, --min-tokens and any it does not know.
	Extra   []string
	Unknown []string // those it does not know (a note each)
	Help    bool
}

// ParseStrataArgs reads Strata's encoder arguments. It never refuses one:
// a server newer than this relay may pass arguments it does not know
// (--min-tokens came that way), and an encoder that exits on one stops
// Strata from starting, text included. --gpu, --threads and --max-tokens
// are read and left alone (see target in run); an unknown "--x" takes the
// next argument as its value unless that starts with "--".
func ParseStrataArgs(args []string) (StrataArgs, error) {
	var a StrataArgs
	var problems []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := strings.Cut(arg, "=")
		value := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			problems = append(problems, name+" needs a value")
			return ""
		}
		switch name {
		case "-h", "--help", "-help":
			a.Help = true
		case "--mmproj", "-mmproj":
			a.Mmproj = value()
		case "--model", "-model":
			a.Model = value()
		case "--gpu", "-gpu":
		case "--threads", "--max-tokens", "-threads", "-max-tokens":
			value()
		case "--min-tokens", "--flash-attn":
			a.Extra = append(a.Extra, name, value())
		default:
			if !strings.HasPrefix(arg, "-") {
				a.Unknown = append(a.Unknown, arg)
				continue
			}
			a.Unknown = append(a.Unknown, name)
			a.Extra = append(a.Extra, name)
			if hasVal {
				a.Extra = append(a.Extra, val)
			} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				a.Extra = append(a.Extra, args[i])
			}
		}
	}
	if a.Mmproj == "" || a.Model == "" {
		problems = append(problems, "Strata passed no --mmproj or no --model (its config's vision block needs both)")
	}
	if len(problems) > 0 {
		return a, errors.New(strings.Join(problems, "; "))
	}
	return a, nil
}
