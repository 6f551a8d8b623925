package agentcmd

import (
	"errors"
	"strings"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// Split splits an ssh command line the way the second PC's program would
// receive it, for goos: sh's words on POSIX, CommandLineToArgvW's on
// Windows. Anything that would make the shell do more than run one program
// is refused, not interpreted: the gate reads the command the client asked
// for (SSH_ORIGINAL_COMMAND), which no shell has read.
func Split(goos, s string) ([]string, error) {
	if remotecmd.Windows(goos) {
		return splitWindows(s)
	}
	return splitPOSIX(s)
}

// splitPOSIX: words, '...' and "..." quotes, backslash escapes. $, `, ;, &,
// |, <, >, globs, a line break outside quotes, and $ or ` inside double
// quotes are refused.
func splitPOSIX(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unclosed quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '$', '`':
					return nil, errors.New("shell syntax ($ or `) is not allowed")
				case '\\':
					if i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
						i++
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("an unclosed quote")
			}
			in = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("a trailing backslash")
			}
			i++
			if s[i] == '\n' {
				return nil, errors.New("shell syntax is not allowed")
			}
			cur.WriteByte(s[i])
			in = true
		case strings.IndexByte("$`;&|<>(){}*?[]!#~\n\r", c) >= 0:
			return nil, errors.New("shell syntax is not allowed")
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// splitWindows is CommandLineToArgvW's reading of a command line (what a
// Go program on Windows gets as os.Args), with what cmd.exe would act on
// (% ! ^ & | < > and line breaks) refused: Windows' OpenSSH runs a command
// through cmd.exe /c.
func splitWindows(s string) ([]string, error) {
	if strings.ContainsAny(s, "%!^&|<>\r\n") {
		return nil, errors.New("shell syntax is not allowed")
	}
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == ' ' || c == '\t') && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
				i--
			}
			in = true
		case c == '"':
			if quoted && i+1 < len(s) && s[i+1] == '"' {
				cur.WriteByte('"')
				i++
			} else {
				quoted = !quoted
			}
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, errors.New("an unclosed quote")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
