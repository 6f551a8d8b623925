//go:build !windows

package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// splitCommand splits a command line as sh would, for what the relay sends:
// words, '...' and "..." quotes, backslash escapes. Anything that would make
// sh do more than run one program ($, `, ;, &, |, <, >, a line break outside
// quotes, $ or ` inside double quotes) is refused.
func splitCommand(s string) ([]string, error) {
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
					if i+1 < len(s) && strings.IndexByte(`"\`, s[i+1]) >= 0 {
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

// isAgentProcess: pid runs the program self (Linux: /proc/PID/exe; other
// systems without /proc refuse).
func isAgentProcess(pid int, self string) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	return filepath.Clean(exe) == filepath.Clean(self)
}
