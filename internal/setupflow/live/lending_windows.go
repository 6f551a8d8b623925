package live

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
)

// errNotAllowed: the user answered No to Windows' question.
var errNotAllowed = errors.New("Windows did not get an administrator's permission, so nothing was changed: try again and answer Yes")

// elevate runs argv through cmd.exe (for its output file and the end
// line) with ShellExecute's "runas" verb: Windows asks for an
// administrator's permission (UAC), and the program runs hidden, on its
// own, after this one ends.
func elevate(_ context.Context, argv []string, out string) error {
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return err
	}
	verb, _ := windows.UTF16PtrFromString("runas")
	file, _ := windows.UTF16PtrFromString(filepath.Join(sys, "cmd.exe"))
	args, err := windows.UTF16PtrFromString(cmdLine(argv, out))
	if err != nil {
		return err
	}
	err = windows.ShellExecute(0, verb, file, args, nil, windows.SW_HIDE)
	if errors.Is(err, windows.ERROR_CANCELLED) {
		return errNotAllowed
	}
	return err
}

// exitWords: cmd.exe keeps only 0 or 1, which say nothing more.
func exitWords(int) string { return "" }

var getTickCount64 = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetTickCount64")

// bootTime is when Windows started (GetTickCount64: milliseconds since).
func bootTime() time.Time {
	if getTickCount64.Find() != nil {
		return time.Time{}
	}
	ms, _, _ := getTickCount64.Call()
	return time.Now().Add(-time.Duration(ms) * time.Millisecond)
}
