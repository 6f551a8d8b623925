// Package remotecmd is the one place that writes command lines for the
// second PC: quoting for the shell that really runs them (POSIX sh, Windows'
// cmd.exe, PowerShell), joining a name to a folder in that OS's style, and
// refusing what no quoting makes safe.
//
// cmd.exe has no escape inside double quotes: a `"` in an argument ends the
// quote and whatever follows (`& calc &`) is a command; `%VAR%` (and `!VAR!`
// with delayed expansion) is expanded even inside quotes. So for Windows
// arguments this package refuses those characters instead of trying to quote
// them, and CheckPath refuses shell syntax in every folder or file name the
// companion sends, whatever the OS: a real folder never needs it.
package remotecmd

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Windows reports whether goos is Windows.
func Windows(goos string) bool { return goos == "windows" }

// POSIX quotes s for sh: as it is when it holds only safe characters, else
// in single quotes (inside which sh expands nothing).
func POSIX(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PowerShellLiteral is s as a PowerShell single-quoted string, in which
// PowerShell expands nothing (” is a quote).
func PowerShellLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// EncodedPowerShell is the command that runs script on Windows whatever the
// ssh login shell is (cmd.exe or PowerShell, which would otherwise each parse
// quotes, $, parentheses and % their own way): -EncodedCommand takes the
// script as base64 of UTF-16LE, so nothing of it is quoted by a shell.
func EncodedPowerShell(script string) string {
	u := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		b[2*i], b[2*i+1] = byte(r), byte(r>>8)
	}
	return "powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand " + base64.StdEncoding.EncodeToString(b)
}

// cmdUnsafe are the characters cmd.exe acts on inside double quotes (", %,
// ! with delayed expansion) or that an argument never needs (^ & | < > and
// line breaks, which a broken quote would turn into commands).
const cmdUnsafe = "\"%!^&|<>\r\n"

// CmdArg is s as one argument on a cmd.exe command line (Windows OpenSSH
// runs `cmd.exe /c <command>`; the program then splits its command line as
// CommandLineToArgvW does). It refuses what cmd.exe would act on.
func CmdArg(s string) (string, error) {
	if strings.ContainsAny(s, cmdUnsafe) || hasControl(s) {
		return "", fmt.Errorf("%q holds a character the Windows command line cannot carry safely (one of \" %% ! ^ & | < > or a control character)", s)
	}
	if s != "" && !strings.ContainsAny(s, " \t()") {
		return s, nil
	}
	// Backslashes before the closing quote would escape it for
	// CommandLineToArgvW: double them there (only there).
	t := strings.TrimRight(s, `\`)
	return `"` + t + strings.Repeat(`\\`, len(s)-len(t)) + `"`, nil
}

// Quote is argv as one command line for goos's login shell: sh, or cmd.exe
// on Windows.
func Quote(goos string, argv []string) (string, error) {
	q := make([]string, len(argv))
	for i, s := range argv {
		if Windows(goos) {
			var err error
			if q[i], err = CmdArg(s); err != nil {
				return "", err
			}
		} else {
			if hasControl(s) {
				return "", fmt.Errorf("%q holds a control character", s)
			}
			q[i] = POSIX(s)
		}
	}
	return strings.Join(q, " "), nil
}

// Join joins a file name to a folder on the second PC in its OS's style; an
// absolute name is kept as it is, as is a name with no folder.
func Join(goos, dir, name string) string {
	if IsAbs(goos, name) || dir == "" {
		return name
	}
	if Windows(goos) {
		return strings.TrimRight(dir, `\/`) + `\` + name
	}
	return path.Join(dir, name)
}

// IsAbs reports whether p is absolute on goos (on Windows C:\..., \..., or
// /...; elsewhere /...).
func IsAbs(goos, p string) bool {
	if Windows(goos) {
		return strings.HasPrefix(p, `\`) || strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':')
	}
	return strings.HasPrefix(p, "/")
}

// pathUnsafe is shell syntax no folder or file name of the companion's
// needs: sh's $ ` ; & | < > * ? [ ] { } ! ", cmd.exe's % ^ and ".
const pathUnsafe = "$`;&|<>*?[]{}!\"%^"

// CheckPath refuses a folder or file name for the second PC that holds shell
// syntax, a control character or a line break, or that starts with "-" (it
// would read as an option). what names it in the message ("remote_dir").
func CheckPath(what, p string) error {
	switch {
	case strings.ContainsAny(p, pathUnsafe):
		return fmt.Errorf("%s %q holds shell syntax (one of %s): name a plain folder or file", what, p, pathUnsafe)
	case hasControl(p):
		return fmt.Errorf("%s %q holds a control character or line break", what, p)
	case strings.HasPrefix(p, "-"):
		return fmt.Errorf("%s %q starts with '-'", what, p)
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar })
}
